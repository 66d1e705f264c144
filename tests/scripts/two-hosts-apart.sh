#!/bin/sh
# Two hosts as in two-hosts.sh, each recording its own part of one run, as hosts that share no
# file system would: the server under one `ppd record --join RUN` in its namespace, the two
# clients under another in theirs. Run inside `unshare -rn`:
#   two-hosts-apart.sh PPD NET_CASES DIR RUN
# leaves the recordings in DIR/server-host and DIR/client-host.
set -e
PPD=$1 NET=$2 DIR=$3 RUN=$4
ip link set lo up
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
PPD_NODE=server nsenter -t "$host" -n \
    "$PPD" record --join "$RUN" -o "$DIR/server-host" -- "$NET" total-server tcp-any "$DIR/address" 2 &
server=$!
while [ ! -s "$DIR/address" ]; do sleep 0.01; done
addr="10.77.0.1:$(sed 's/.*://' "$DIR/address")"
"$PPD" record --join "$RUN" -o "$DIR/client-host" -- sh -c "
    PPD_NODE=alice '$NET' total-client $addr alice 1 &
    PPD_NODE=bob '$NET' total-client $addr bob 2 &
    wait"
wait $server
