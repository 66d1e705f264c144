#!/bin/sh
# A UDP collector and two senders, each an OS process; the collector reads late, so some
# datagrams are dropped by the kernel, and the two senders' datagrams interleave:
# datagrams.sh NET_CASES DIR COUNT.
set -e
NET=$1 DIR=$2 COUNT=$3
PPD_NODE=collector "$NET" udp-collector "$DIR/address" &
collector=$!
while [ ! -s "$DIR/address" ]; do sleep 0.01; done
addr=$(cat "$DIR/address")
PPD_NODE=alice "$NET" udp-sender "$addr" alice "$COUNT" &
alice=$!
PPD_NODE=bob "$NET" udp-sender "$addr" bob "$COUNT" &
bob=$!
wait $alice
wait $bob
wait $collector
