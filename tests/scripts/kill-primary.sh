#!/bin/sh
# The replicated store of examples/kvstore.rs with its primary killed (SIGKILL) in the middle
# of serving the client: the client then fails on the broken connection, and the backup,
# left waiting for a reader that never comes, is killed too. kill-primary.sh KVSTORE REC,
# REC being the recording `ppd record -o` writes, watched for the primary's session to start.
KV=$1 REC=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
address_of() {
    while [ -z "$(head -n 1 "$dir/$1" 2>/dev/null)" ]; do sleep 0.01; done
    head -n 1 "$dir/$1"
}
PPD_NODE=backup "$KV" backup > "$dir/backup" &
backup=$!
backup_addr=$(address_of backup)
PPD_NODE=primary "$KV" primary "$backup_addr" > "$dir/primary" &
primary=$!
primary_addr=$(address_of primary)
# More puts than it can serve before the kill.
PPD_NODE=client "$KV" client "$primary_addr" "$backup_addr" 1000000 &
client=$!
while [ ! -s "$REC/nodes/primary/proc-0001.log" ]; do sleep 0.01; done
sleep 1
kill -KILL $primary
wait $client
kill -KILL $backup
wait $backup
exit 0
