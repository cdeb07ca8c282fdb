//! The schema version checked at connect: an empty database gets the
//! current one; a newer or unknown one is refused and left untouched.

use workflow_postgres::{OpenError, PostgresLedger, SCHEMA_VERSION};

use crate::cluster::{Cluster, cluster_or_skip};

/// Every table of the database's public schema with its rows, as text: what
/// must not change when a connection is refused.
fn snapshot(cluster: &Cluster, db: &str) -> Vec<String> {
    let tables = cluster.rows(
        db,
        "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename",
    );
    let mut out = Vec::new();
    for table in tables {
        let table = table[0].clone().expect("a table name");
        let rows = cluster.rows(db, &format!("SELECT * FROM {table} ORDER BY 1"));
        out.push(format!("{table}: {rows:?}"));
    }
    out
}

#[test]
fn an_empty_database_gets_the_current_version_and_keeps_it() {
    let cluster = cluster_or_skip!();
    let url = cluster.database("fresh");
    drop(PostgresLedger::connect(&url).expect("connects"));
    let version = cluster.rows("fresh", "SELECT version FROM workflow_schema_version");
    assert_eq!(version, [[Some(SCHEMA_VERSION.to_string())]]);
    let before = snapshot(&cluster, "fresh");
    assert_eq!(before.len(), 7, "{before:?}");
    // Connecting again to a current database changes nothing.
    drop(PostgresLedger::connect(&url).expect("connects again"));
    assert_eq!(snapshot(&cluster, "fresh"), before);
}

#[test]
fn a_newer_version_is_refused_naming_both_and_nothing_is_altered() {
    let cluster = cluster_or_skip!();
    let url = cluster.database("newer");
    drop(PostgresLedger::connect(&url).expect("connects"));
    let newer = SCHEMA_VERSION + 1;
    cluster.sql(
        "newer",
        &format!(
            "UPDATE workflow_schema_version SET version = {newer};
             ALTER TABLE workflow_records ADD COLUMN signature TEXT;"
        ),
    );
    let before = snapshot(&cluster, "newer");
    let error = PostgresLedger::connect(&url)
        .err()
        .expect("a newer schema is refused");
    assert_eq!(
        error,
        OpenError::NewerSchema {
            found: newer,
            supported: SCHEMA_VERSION
        }
    );
    let message = error.to_string();
    assert!(
        message.contains(&format!("version {newer}"))
            && message.contains(&format!("version {SCHEMA_VERSION}")),
        "{message}"
    );
    assert_eq!(snapshot(&cluster, "newer"), before);
}

#[test]
fn unknown_schemas_are_refused_and_nothing_is_altered() {
    let cluster = cluster_or_skip!();
    // Ledger tables without a version table: not written by this library.
    let url = cluster.database("unversioned");
    cluster.sql(
        "unversioned",
        "CREATE TABLE workflow_records (id INT); INSERT INTO workflow_records VALUES (7);",
    );
    let before = snapshot(&cluster, "unversioned");
    let error = PostgresLedger::connect(&url).err().expect("refused");
    assert!(
        matches!(&error, OpenError::UnknownSchema { found, supported: SCHEMA_VERSION }
            if found.contains("workflow_records")),
        "{error:?}"
    );
    assert_eq!(snapshot(&cluster, "unversioned"), before);

    // Version rows that are not one version.
    for (db, sql) in [
        (
            "two_rows",
            "CREATE TABLE workflow_schema_version (version BIGINT);
             INSERT INTO workflow_schema_version VALUES (1), (1);",
        ),
        (
            "zero",
            "CREATE TABLE workflow_schema_version (version BIGINT);
             INSERT INTO workflow_schema_version VALUES (0);",
        ),
        (
            "text",
            "CREATE TABLE workflow_schema_version (version TEXT);
             INSERT INTO workflow_schema_version VALUES ('one');",
        ),
    ] {
        let url = cluster.database(db);
        cluster.sql(db, sql);
        let before = snapshot(&cluster, db);
        let error = PostgresLedger::connect(&url).err().expect("refused");
        assert!(
            matches!(
                error,
                OpenError::UnknownSchema {
                    supported: SCHEMA_VERSION,
                    ..
                }
            ),
            "{db}: {error:?}"
        );
        assert!(error.to_string().contains("nothing was changed"), "{error}");
        assert_eq!(snapshot(&cluster, db), before, "{db}");
    }
}

#[test]
fn a_bad_url_and_an_unreachable_server_are_typed_errors() {
    assert!(matches!(
        PostgresLedger::connect("postgres://[::1"),
        Err(OpenError::Config(_))
    ));
    // A port nothing listens on (bound, then released).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let error = PostgresLedger::connect(&format!("postgres://postgres@127.0.0.1:{port}/x"))
        .err()
        .expect("nothing listens");
    assert!(matches!(error, OpenError::Connect(_)), "{error:?}");
}

#[test]
fn a_read_only_connection_creates_nothing_and_writes_nothing() {
    let cluster = cluster_or_skip!();
    let url = cluster.database("reader");
    let error = PostgresLedger::connect_read_only(&url)
        .err()
        .expect("no ledger here");
    assert_eq!(error, OpenError::NoLedger);
    assert_eq!(snapshot(&cluster, "reader"), Vec::<String>::new());

    drop(PostgresLedger::connect(&url).expect("creates the ledger"));
    let before = snapshot(&cluster, "reader");
    let reader = PostgresLedger::connect_read_only(&url).expect("reads");
    use workflow_core::ledger::Ledger;
    assert_eq!(reader.runs().unwrap(), Vec::<u64>::new());
    let call = workflow_core::tool::ToolCallRecord {
        tool: "t".into(),
        index: 0,
        arguments: "{}".into(),
        outcome: workflow_core::tool::ToolOutcome::Ok {
            result: "1".into(),
            digest: String::new(),
        },
        attempts: 1,
        duration_us: 1,
        audit: None,
    };
    let refused = reader
        .append_tool_call(
            1,
            1,
            &workflow_core::ledger::JournalEntry::bind(1, 1, "", call.clone()),
        )
        .expect_err("read-only");
    assert!(refused.to_string().contains("read-only"), "{refused}");
    assert_eq!(snapshot(&cluster, "reader"), before);
}

/// A database written at version 1 (before the work queue): a read-only
/// connection refuses it untouched; a read-write one migrates it to the
/// current version in place, its records kept.
#[test]
fn a_version_1_database_is_migrated_and_keeps_its_records() {
    let cluster = cluster_or_skip!();
    let url = cluster.database("v1");
    cluster.sql(
        "v1",
        "CREATE TABLE workflow_records (run_id BIGINT NOT NULL, seq BIGINT NOT NULL,
             record TEXT NOT NULL, PRIMARY KEY (run_id, seq));
         CREATE TABLE workflow_heads (run_id BIGINT PRIMARY KEY, seq BIGINT NOT NULL,
             hash TEXT NOT NULL);
         CREATE TABLE workflow_tool_calls (run_id BIGINT NOT NULL, turn_seq BIGINT NOT NULL,
             idx BIGINT NOT NULL, call TEXT NOT NULL, PRIMARY KEY (run_id, turn_seq, idx));
         CREATE TABLE workflow_schema_version (version BIGINT NOT NULL);
         INSERT INTO workflow_schema_version VALUES (1);
         INSERT INTO workflow_heads VALUES (5, 0, 'h');",
    );
    let before = snapshot(&cluster, "v1");
    assert_eq!(
        PostgresLedger::connect_read_only(&url).err(),
        Some(OpenError::OlderSchema {
            found: 1,
            supported: SCHEMA_VERSION
        })
    );
    assert_eq!(snapshot(&cluster, "v1"), before);

    let ledger = PostgresLedger::connect(&url).expect("migrates");
    use workflow_core::ledger::Ledger;
    assert_eq!(ledger.head(5).unwrap(), Some((0, "h".to_string())));
    assert!(
        ledger.submit(5, "deploy", "{}").unwrap(),
        "the queue exists"
    );
    assert_eq!(
        cluster.rows("v1", "SELECT version FROM workflow_schema_version"),
        [[Some(SCHEMA_VERSION.to_string())]]
    );
}

/// A database written at version 2 (leases kept in the queue rows): its
/// leases move to `workflow_leases` with their holders and tokens, so a
/// live one still holds its run and a later claim takes the next token.
#[test]
fn a_version_2_database_keeps_its_leases_and_tokens() {
    let cluster = cluster_or_skip!();
    let url = cluster.database("v2");
    cluster.sql(
        "v2",
        "CREATE TABLE workflow_records (run_id BIGINT NOT NULL, seq BIGINT NOT NULL,
             record TEXT NOT NULL, PRIMARY KEY (run_id, seq));
         CREATE TABLE workflow_heads (run_id BIGINT PRIMARY KEY, seq BIGINT NOT NULL,
             hash TEXT NOT NULL);
         CREATE TABLE workflow_tool_calls (run_id BIGINT NOT NULL, turn_seq BIGINT NOT NULL,
             idx BIGINT NOT NULL, call TEXT NOT NULL, PRIMARY KEY (run_id, turn_seq, idx));
         CREATE TABLE workflow_queue (run_id BIGINT PRIMARY KEY, workflow TEXT NOT NULL,
             input TEXT NOT NULL, state TEXT NOT NULL DEFAULT 'queued'
                 CHECK (state IN ('queued', 'claimed', 'done')),
             holder TEXT, token BIGINT NOT NULL DEFAULT 0, lease_until TIMESTAMPTZ,
             submitted_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp());
         CREATE INDEX workflow_queue_claimable
             ON workflow_queue (submitted_at, run_id) WHERE state <> 'done';
         CREATE TABLE workflow_schema_version (version BIGINT NOT NULL);
         INSERT INTO workflow_schema_version VALUES (2);
         INSERT INTO workflow_queue (run_id, workflow, input, state, holder, token, lease_until)
             VALUES (1, 'deploy', '{}', 'claimed', 'w1', 4, now() + interval '1 hour'),
                    (2, 'deploy', '{}', 'claimed', 'w2', 7, now() - interval '1 hour'),
                    (3, 'deploy', '{}', 'queued', NULL, 0, NULL);",
    );
    let ledger = PostgresLedger::connect(&url).expect("migrates");
    use workflow_core::ledger::Ledger;
    let live = ledger.lease(1).unwrap().expect("kept");
    assert_eq!((live.holder.as_str(), live.token), ("w1", 4));
    assert_eq!(ledger.lease(3).unwrap(), None);
    let ttl = std::time::Duration::from_secs(60);
    let first = ledger.claim_next(&["deploy"], "w3", ttl).unwrap().unwrap();
    assert_eq!((first.lease.run_id, first.lease.token), (2, 8), "expired");
    let second = ledger.claim_next(&["deploy"], "w3", ttl).unwrap().unwrap();
    assert_eq!((second.lease.run_id, second.lease.token), (3, 1));
    assert!(
        ledger.claim_next(&["deploy"], "w3", ttl).unwrap().is_none(),
        "run 1's lease still holds"
    );
}
