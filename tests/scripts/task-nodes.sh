#!/bin/sh
# A processor farm over OS processes: the farm node and three worker nodes, whose work for
# task 0 hangs until the test kills that worker: task-nodes.sh TASK_CASES DIR.
CASES=$1 DIR=$2
PPD_NODE=farm "$CASES" farm-nodes "$DIR/address" 3 &
farm=$!
while [ ! -s "$DIR/address" ]; do sleep 0.01; done
addr=$(cat "$DIR/address")
for w in 0 1 2; do
    PPD_NODE=worker-$w "$CASES" node-worker "$addr" 0 &
done
wait
exit 0
