//! Where a client reaches the bench server, as `fleet bench` chooses it.

/// How client `client` reaches the bench server on `server` (inventory
/// names), as `fleet bench` chooses it: the client's `server_address.SERVER`
/// label; with one server its `server_address` label, then `flag`
/// (`--server-address`); the server's `bench_address` label, its ssh
/// address, its name.
pub fn server_address(
    inv: &model::inventory::Inventory,
    client: &str,
    server: &str,
    one_server: bool,
    flag: Option<&str>,
) -> String {
    let host = |name: &str| inv.hosts.iter().find(|h| h.name.as_str() == name);
    let c = host(client);
    let own = c.and_then(|h| h.labels.get(&format!("server_address.{server}")).cloned());
    let one = one_server
        .then(|| {
            c.and_then(|h| h.labels.get("server_address").cloned())
                .or_else(|| flag.map(str::to_string))
        })
        .flatten();
    let sh = host(server);
    own.or(one)
        .or_else(|| sh.and_then(|h| h.labels.get("bench_address").cloned()))
        .or_else(|| match sh.map(|h| &h.transport) {
            Some(model::inventory::Transport::Ssh { address, .. }) => Some(address.clone()),
            _ => None,
        })
        .unwrap_or_else(|| server.to_string())
}
