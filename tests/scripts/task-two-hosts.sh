#!/bin/sh
# A processor farm across two hosts: the farm node on a second one (see server-host.sh), its
# three worker nodes here, none failing. Run inside `unshare -rn`: task-two-hosts.sh
# TASK_CASES DIR.
set -e
CASES=$1 DIR=$2
. "$(dirname "$0")/server-host.sh"
PPD_NODE=farm nsenter -t "$host" -n "$CASES" farm-nodes "$DIR/address" 3 0.0.0.0:0 &
farm=$!
addr=$(server_address)
workers=""
for w in 0 1 2; do
    PPD_NODE=worker-$w "$CASES" node-worker "$addr" 999 &
    workers="$workers $!"
done
for pid in $workers; do
    wait "$pid"
done
wait $farm
