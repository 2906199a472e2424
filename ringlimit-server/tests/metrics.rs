//! `/metrics` over HTTP: counters per rule (never per request value), in a format
//! Prometheus' own checker accepts (`promtool check metrics`, SKIPPED without it).

mod support;

use std::io::{Read, Write};

use ringlimit_server::backend::Backend;
use support::{call, data, request, start};

fn get(addr: std::net::SocketAddr, path: &str) -> String {
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(stream, "GET {path} HTTP/1.1\r\nhost: x\r\n\r\n").unwrap();
    let mut reply = String::new();
    stream.read_to_string(&mut reply).unwrap();
    reply
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_per_rule_and_never_name_request_values() {
    let (server, mut client) = start(&data("envoy"), Backend::local()).await;
    for user in ["alice", "bob", "carol"] {
        call(
            &mut client,
            request("example6", &[&[("service", "s"), ("user", "user-b")]], 1),
        )
        .await;
        call(
            &mut client,
            request("messaging", &[&[("to_number", user)]], 1),
        )
        .await;
    }
    call(
        &mut client,
        request("example6", &[&[("service", "s"), ("user", "user-b")]], 100),
    )
    .await;
    let addr = server.metrics_addr().unwrap();
    let reply = tokio::task::spawn_blocking(move || get(addr, "/metrics"))
        .await
        .unwrap();
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    let body = reply.split("\r\n\r\n").nth(1).unwrap().to_owned();
    assert!(
        body.contains("ringlimit_server_hits_total{rule=\"messaging.to_number\"} 3"),
        "{body}"
    );
    assert!(
        body.contains(
            "ringlimit_server_over_limit_total{rule=\"example6.service.user_user-b\"} 100"
        ),
        "{body}"
    );
    assert!(
        body.contains("ringlimit_server_calls_total{answer=\"over_limit\"} 1"),
        "{body}"
    );
    assert!(!body.contains("alice") && !body.contains("bob"), "{body}");

    match std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
    {
        Ok(mut child) => {
            child
                .stdin
                .take()
                .unwrap()
                .write_all(body.as_bytes())
                .unwrap();
            let out = child.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "promtool: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Err(error) => {
            let line = format!("SKIPPED: ringlimit-server tests/metrics.rs (promtool check metrics): promtool not found ({error}; apt-get install prometheus)");
            assert!(
                std::env::var("CI").map_or(true, |v| v.is_empty() || v == "0" || v == "false"),
                "{line}"
            );
            eprintln!("{line}");
        }
    }
}
