#!/bin/sh
# Starts the replicated key-value store of examples/kvstore.rs: the backup, the primary and a
# client, each an OS process, each started once the one it connects to is listening (a server
# prints its address first thing).
#   sh examples/kvstore.sh [KVSTORE_BINARY] [PUTS]
# Record all three as one run: ppd record -- sh examples/kvstore.sh
set -e
bin=${1:-target/debug/examples/kvstore}
puts=${2:-12}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# The address a server printed on its first line.
address_of() {
    while [ -z "$(head -n 1 "$dir/$1" 2>/dev/null)" ]; do sleep 0.01; done
    head -n 1 "$dir/$1"
}

PPD_NODE=backup "$bin" backup > "$dir/backup" &
backup=$!
backup_addr=$(address_of backup)
PPD_NODE=primary "$bin" primary "$backup_addr" > "$dir/primary" &
primary=$!
primary_addr=$(address_of primary)
status=0
PPD_NODE=client "$bin" client "$primary_addr" "$backup_addr" "$puts" || status=$?
wait $primary
wait $backup
exit $status
