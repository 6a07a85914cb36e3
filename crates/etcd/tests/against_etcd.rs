//! The client against a real single-member etcd on loopback (Debian's `etcd-server`).

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use etcd::{Client, Compare, EtcdError, Event, Op};

struct Etcd {
    child: Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl Drop for Etcd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn etcd() -> Etcd {
    let dir = tempfile::tempdir().unwrap();
    let (client, peer) = (free_port(), free_port());
    let url = format!("http://127.0.0.1:{client}");
    let child = Command::new("etcd")
        .args(["--name", "solo", "--data-dir"])
        .arg(dir.path())
        .args([
            "--listen-client-urls",
            &url,
            "--advertise-client-urls",
            &url,
        ])
        .arg(format!("--listen-peer-urls=http://127.0.0.1:{peer}"))
        .arg(format!(
            "--initial-advertise-peer-urls=http://127.0.0.1:{peer}"
        ))
        .arg(format!("--initial-cluster=solo=http://127.0.0.1:{peer}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("etcd runs (apt-get install etcd-server)");
    let etcd = Etcd {
        child,
        url,
        _dir: dir,
    };
    let started = Instant::now();
    while std::net::TcpStream::connect(etcd.url.trim_start_matches("http://")).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "etcd did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    etcd
}

fn client(etcd: &Etcd) -> Client {
    Client::new(std::slice::from_ref(&etcd.url), Duration::from_secs(3)).unwrap()
}

#[tokio::test]
async fn create_if_absent_has_exactly_one_winner() {
    let etcd = etcd();
    let client = client(&etcd);
    let mut racers = Vec::new();
    for i in 0..8u8 {
        let client = client.clone();
        racers.push(tokio::spawn(async move {
            let key = b"/t/meetings/race".to_vec();
            client
                .txn(
                    &[Compare::Absent(key.clone())],
                    &[Op::Put {
                        key: key.clone(),
                        value: vec![i],
                    }],
                    &[Op::Get(key)],
                )
                .await
                .unwrap()
        }));
    }
    let mut winners = Vec::new();
    for racer in racers {
        let outcome = racer.await.unwrap();
        if outcome.succeeded {
            winners.push(outcome.revision);
        } else {
            assert_eq!(outcome.gets.len(), 1, "the loser reads the winner");
        }
    }
    assert_eq!(winners.len(), 1);
    let (kv, _) = client.get(b"/t/meetings/race").await.unwrap();
    assert_eq!(kv.unwrap().mod_revision, winners[0]);
}

#[tokio::test]
async fn compare_and_swap_refuses_a_stale_revision() {
    let etcd = etcd();
    let client = client(&etcd);
    let key = b"/t/k".to_vec();
    let first = client.put(&key, b"one").await.unwrap();
    let swap = |rev: i64, value: &'static [u8]| {
        let client = client.clone();
        let key = key.clone();
        async move {
            client
                .txn(
                    &[Compare::ModRevision(key.clone(), rev)],
                    &[Op::Put {
                        key,
                        value: value.to_vec(),
                    }],
                    &[],
                )
                .await
                .unwrap()
                .succeeded
        }
    };
    assert!(swap(first, b"two").await);
    assert!(!swap(first, b"three").await, "the revision moved on");
    let (kv, _) = client.get(&key).await.unwrap();
    assert_eq!(kv.unwrap().value, b"two");
    assert!(!swap(0, b"x").await, "0 means absent");
}

#[tokio::test]
async fn a_watch_sees_every_change_after_its_start() {
    let etcd = etcd();
    let client = client(&etcd);
    client.put(b"/w/a", b"before").await.unwrap();
    let (all, revision) = client.get_prefix(b"/w/").await.unwrap();
    assert_eq!(all.len(), 1);
    let mut watch = client.watch_prefix(b"/w/", revision + 1).await.unwrap();
    client.put(b"/w/b", b"1").await.unwrap();
    client.put(b"/x/c", b"outside").await.unwrap();
    client
        .txn(&[], &[Op::Delete(b"/w/a".to_vec())], &[])
        .await
        .unwrap();
    let mut seen = Vec::new();
    while seen.len() < 2 {
        let batch = tokio::time::timeout(Duration::from_secs(5), watch.next())
            .await
            .expect("a change arrives")
            .unwrap();
        seen.extend(batch.events);
    }
    assert!(matches!(&seen[0], Event::Put(kv) if kv.key == b"/w/b" && kv.value == b"1"));
    assert!(matches!(&seen[1], Event::Delete(kv) if kv.key == b"/w/a"));
}

#[tokio::test]
async fn a_dead_endpoint_is_skipped_and_a_dead_cluster_is_unavailable() {
    let etcd = etcd();
    let dead = format!("http://127.0.0.1:{}", free_port());
    let client = Client::new(&[dead.clone(), etcd.url.clone()], Duration::from_secs(2)).unwrap();
    client.put(b"/f/k", b"v").await.unwrap();
    let (kv, _) = client.get(b"/f/k").await.unwrap();
    assert_eq!(kv.unwrap().value, b"v");
    let none = Client::new(&[dead], Duration::from_millis(500)).unwrap();
    assert!(matches!(
        none.get(b"/f/k").await,
        Err(EtcdError::Unavailable(_))
    ));
}

#[tokio::test]
async fn a_prefix_is_read_in_pages_at_one_revision() {
    let etcd = etcd();
    let client = client(&etcd);
    for i in 0..25 {
        client
            .put(format!("/p/k{i:02}").as_bytes(), b"v")
            .await
            .unwrap();
    }
    client.put(b"/q/outside", b"v").await.unwrap();
    let (all, revision) = client.get_prefix_paged(b"/p/", 10).await.unwrap();
    let keys: Vec<String> = all
        .iter()
        .map(|kv| String::from_utf8_lossy(&kv.key).into_owned())
        .collect();
    let expected: Vec<String> = (0..25).map(|i| format!("/p/k{i:02}")).collect();
    assert_eq!(keys, expected, "three pages, every key once, in order");
    // A page that ends exactly at the last key, and a page of one.
    assert_eq!(client.get_prefix_paged(b"/p/", 5).await.unwrap().0, all);
    assert_eq!(client.get_prefix_paged(b"/p/", 1).await.unwrap().0, all);
    // A page is a page: ten keys and the word that more follow.
    let first = client.range_page(b"/p/", b"/p0", 10, 0).await.unwrap();
    assert_eq!((first.kvs.len(), first.more), (10, true));
    assert_eq!(first.kvs[..], all[..10]);
    assert_eq!(
        client.get_prefix(b"/p/").await.unwrap(),
        (all.clone(), revision)
    );
    // Pages after the first read the first one's revision: a key written meanwhile
    // (here, between two pages) is not in this read.
    client.put(b"/p/k10a", b"late").await.unwrap();
    let mut from = first.kvs[9].key.clone();
    from.push(0);
    let second = client
        .range_page(&from, b"/p0", 10, first.revision)
        .await
        .unwrap();
    assert_eq!(second.kvs[..], all[10..20]);
    let now = client.range_page(&from, b"/p0", 10, 0).await.unwrap();
    assert_eq!(now.kvs[1].key, b"/p/k10a".to_vec(), "read now, it is there");
    assert!(client
        .get_prefix_paged(b"/none/", 10)
        .await
        .unwrap()
        .0
        .is_empty());
}

#[tokio::test]
async fn a_key_under_a_lease_vanishes_when_the_lease_expires() {
    let etcd = etcd();
    let client = client(&etcd);
    let lease = client.grant_lease(2).await.unwrap();
    client
        .put_with_lease(b"/l/node", b"report", lease)
        .await
        .unwrap();
    client.put(b"/l/kept", b"plain").await.unwrap();
    assert!(client.get(b"/l/node").await.unwrap().0.is_some());
    let started = Instant::now();
    loop {
        if client.get(b"/l/node").await.unwrap().0.is_none() {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the leased key outlived its lease"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(client.get(b"/l/kept").await.unwrap().0.is_some());
    assert!(
        client
            .put_with_lease(b"/l/late", b"x", lease)
            .await
            .is_err(),
        "an expired lease takes no key"
    );
}
