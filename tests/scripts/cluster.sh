#!/bin/sh
# A total server and two clients, each an OS process of its own, as a user's launcher would
# start them: cluster.sh NET_CASES tcp|unix DIR. The server publishes its address in DIR.
set -e
NET=$1 TRANSPORT=$2 DIR=$3
PPD_NODE=server "$NET" total-server "$TRANSPORT" "$DIR/address" 2 &
server=$!
while [ ! -s "$DIR/address" ]; do sleep 0.01; done
addr=$(cat "$DIR/address")
PPD_NODE=alice "$NET" total-client "$addr" alice 1 &
alice=$!
PPD_NODE=bob "$NET" total-client "$addr" bob 2 &
bob=$!
wait $alice
wait $bob
wait $server
