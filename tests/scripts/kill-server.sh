#!/bin/sh
# The total server serves alice, then is killed with SIGKILL while it waits for its second
# client; bob then finds nobody listening: kill-server.sh NET_CASES DIR.
NET=$1 DIR=$2
PPD_NODE=server "$NET" total-server tcp "$DIR/address" 2 &
server=$!
while [ ! -s "$DIR/address" ]; do sleep 0.01; done
addr=$(cat "$DIR/address")
PPD_NODE=alice "$NET" total-client "$addr" alice 1
kill -KILL $server
wait $server
PPD_NODE=bob "$NET" total-client "$addr" bob 2
exit 0
