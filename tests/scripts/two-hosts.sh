#!/bin/sh
# Two hosts on one machine: this network namespace (the clients') and a second one (the
# server's), joined by a veth pair, 10.77.0.2 <-> 10.77.0.1. Run inside `unshare -rn` (a
# network namespace of its own, unprivileged): two-hosts.sh NET_CASES DIR.
set -e
NET=$1 DIR=$2
ip link set lo up
# The server's host: a process holding a second network namespace.
unshare -n sh -c "echo \$\$ > '$DIR/host.pid'; exec sleep 600" &
holder=$!
trap 'kill $holder 2>/dev/null' EXIT
while [ ! -s "$DIR/host.pid" ]; do sleep 0.01; done
host=$(cat "$DIR/host.pid")
ip link add ppd-client type veth peer name ppd-server netns "$host"
ip addr add 10.77.0.2/24 dev ppd-client
ip link set ppd-client up
nsenter -t "$host" -n sh -c \
    'ip addr add 10.77.0.1/24 dev ppd-server && ip link set ppd-server up && ip link set lo up'
PPD_NODE=server nsenter -t "$host" -n "$NET" total-server tcp-any "$DIR/address" 2 &
server=$!
while [ ! -s "$DIR/address" ]; do sleep 0.01; done
addr="10.77.0.1:$(sed 's/.*://' "$DIR/address")"
PPD_NODE=alice "$NET" total-client "$addr" alice 1 &
alice=$!
PPD_NODE=bob "$NET" total-client "$addr" bob 2 &
bob=$!
wait $alice
wait $bob
wait $server
