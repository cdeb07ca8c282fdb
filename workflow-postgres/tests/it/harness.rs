//! The throwaway cluster itself: it serves, and leaves nothing behind.

use crate::cluster::cluster_or_skip;

#[test]
fn a_cluster_serves_queries_and_is_removed_when_dropped() {
    let cluster = cluster_or_skip!();
    let url = cluster.database("harness");
    assert!(url.starts_with("postgres://postgres@127.0.0.1:"), "{url}");
    let rows = cluster.rows("harness", "SELECT current_database(), 1 + 1");
    assert_eq!(rows, [[Some("harness".to_string()), Some("2".to_string())]]);
    let dir = cluster.dir().to_path_buf();
    let port = url
        .rsplit(':')
        .next()
        .and_then(|p| p.split('/').next())
        .and_then(|p| p.parse::<u16>().ok())
        .expect("the URL names its port");
    drop(cluster);
    assert!(!dir.exists(), "{} is removed", dir.display());
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
        "the server is stopped"
    );
}
