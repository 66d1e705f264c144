#!/bin/sh
# Two hosts as in two-hosts.sh, each recording its own part of one run, as hosts that share no
# file system would: the server under one `ppd record --join RUN` in its namespace, the two
# clients under another in theirs. Run inside `unshare -rn`:
#   two-hosts-apart.sh PPD NET_CASES DIR RUN
# leaves the recordings in DIR/server-host and DIR/client-host.
set -e
PPD=$1 NET=$2 DIR=$3 RUN=$4
. "$(dirname "$0")/server-host.sh"
PPD_NODE=server nsenter -t "$host" -n \
    "$PPD" record --join "$RUN" -o "$DIR/server-host" -- "$NET" total-server tcp-any "$DIR/address" 2 &
server=$!
addr=$(server_address)
"$PPD" record --join "$RUN" -o "$DIR/client-host" -- sh -c "
    PPD_NODE=alice '$NET' total-client $addr alice 1 &
    PPD_NODE=bob '$NET' total-client $addr bob 2 &
    wait"
wait $server
