#!/bin/sh
# Two hosts on one machine: this network namespace (the clients') and a second one (the
# server's), joined by a veth pair, 10.77.0.2 <-> 10.77.0.1. Run inside `unshare -rn` (a
# network namespace of its own, unprivileged): two-hosts.sh NET_CASES DIR.
set -e
NET=$1 DIR=$2
. "$(dirname "$0")/server-host.sh"
PPD_NODE=server nsenter -t "$host" -n "$NET" total-server tcp-any "$DIR/address" 2 &
server=$!
addr=$(server_address)
PPD_NODE=alice "$NET" total-client "$addr" alice 1 &
alice=$!
PPD_NODE=bob "$NET" total-client "$addr" bob 2 &
bob=$!
wait $alice
wait $bob
wait $server
