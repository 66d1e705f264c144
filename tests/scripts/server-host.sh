# Sourced by the two-host launchers: makes the server's host, a second network namespace held
# by a sleeping process, joined to this one by a veth pair (10.77.0.2 here, 10.77.0.1 there),
# and sets `host` to the holder's pid, for `nsenter -t "$host" -n`. Needs DIR set, and this
# namespace to be one the caller may change (`unshare -rn`).
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

# The address the server published in DIR/address, on the server's host.
server_address() {
    while [ ! -s "$DIR/address" ]; do sleep 0.01; done
    echo "10.77.0.1:$(sed 's/.*://' "$DIR/address")"
}
