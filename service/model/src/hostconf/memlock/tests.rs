use super::*;

const DEBIAN_LIMITS_CONF: &str = include_str!("../testdata/host_setup/debian12-limits.conf");
const RHEL_LIMITS_CONF: &str = include_str!("../testdata/host_setup/linux-pam-1.5.1-limits.conf");
const RHEL_NPROC: &str = include_str!("../testdata/host_setup/rhel-20-nproc.conf");

fn dropin(name: &str, text: &str) -> LimitsFile {
    LimitsFile {
        path: format!("{LIMITS_D}/{name}"),
        bytes: text.as_bytes().to_vec(),
    }
}

fn daemon(soft: MemlockValue, hard: MemlockValue) -> LimitsFile {
    LimitsFile {
        path: DAEMON_FILE.into(),
        bytes: render_daemon_file(RDMA_GROUP, soft, hard)
            .unwrap()
            .into_bytes(),
    }
}

fn sources(main: Option<&str>, dropins: Vec<LimitsFile>) -> LimitsSources {
    LimitsSources {
        limits_conf: main.map(|m| m.as_bytes().to_vec()),
        limits_conf_unread: false,
        dropins,
    }
}

fn member(s: &LimitsSources) -> MemlockResolution {
    resolve_group_member(s, RDMA_GROUP, None)
}

fn set(r: &LimitSetting) -> (MemlockValue, String) {
    match r {
        LimitSetting::Set { value, origin, .. } => (*value, origin.to_string()),
        LimitSetting::NotSet { why } => panic!("not set: {why}"),
    }
}

use MemlockValue::{Kib, Unlimited};

const MAIN: &str = "/etc/security/limits.conf";

#[test]
fn distribution_defaults_set_no_memlock() {
    for s in [
        sources(Some(DEBIAN_LIMITS_CONF), vec![]),
        sources(
            Some(RHEL_LIMITS_CONF),
            vec![dropin("20-nproc.conf", RHEL_NPROC)],
        ),
    ] {
        let r = member(&s);
        assert_eq!(
            r.soft,
            LimitSetting::NotSet {
                why: NOT_SET.into()
            }
        );
        assert_eq!(
            r.hard,
            LimitSetting::NotSet {
                why: NOT_SET.into()
            }
        );
        assert!(r.notes.is_empty(), "{:?}", r.notes);
        assert!(r.conditional.is_empty() && r.caveats.is_empty());
        assert_eq!(r.daemon_file, None);
    }
    assert!(NOT_SET.contains("kernel"));
    let r = member(&sources(
        Some(RHEL_LIMITS_CONF),
        vec![dropin("20-nproc.conf", RHEL_NPROC)],
    ));
    assert_eq!(r.files_read, [MAIN, "/etc/security/limits.d/20-nproc.conf"]);
}

#[test]
fn the_guides_lines_in_limits_conf() {
    let main =
        format!("{RHEL_LIMITS_CONF}@rdma soft memlock unlimited\n@rdma hard memlock unlimited\n");
    let r = member(&sources(
        Some(&main),
        vec![dropin("20-nproc.conf", RHEL_NPROC)],
    ));
    assert_eq!(set(&r.soft), (Unlimited, format!("{MAIN}:62")));
    assert_eq!(set(&r.hard), (Unlimited, format!("{MAIN}:63")));
    assert!(matches!(
        &r.soft,
        LimitSetting::Set { class: DomainClass::Group, domain, .. } if domain == "@rdma"
    ));
    // Someone not in rdma gets nothing from them.
    let other = resolve(
        &sources(Some(&main), vec![]),
        &Subject::member_of("users", None),
    );
    assert_eq!(other.soft.value(), None);
}

#[test]
fn the_daemon_file_wins_over_other_group_and_default_entries() {
    let s = sources(
        Some("*\thard\tmemlock\t64\n@rdma hard memlock 1024\n"),
        vec![
            dropin("90-hpc.conf", "@rdma soft memlock 2048\n* soft memlock 8\n"),
            daemon(Kib(1_048_576), Unlimited),
            dropin("20-nproc.conf", RHEL_NPROC),
        ],
    );
    let r = member(&s);
    assert_eq!(set(&r.soft), (Kib(1_048_576), format!("{DAEMON_FILE}:7")));
    assert_eq!(set(&r.hard), (Unlimited, format!("{DAEMON_FILE}:8")));
    let d = r.daemon_file.unwrap();
    assert_eq!(
        (d.soft, d.hard),
        (DaemonOutcome::Effective, DaemonOutcome::Effective)
    );
    assert_eq!(
        d.settings,
        DaemonSettings {
            soft: Some(Kib(1_048_576)),
            hard: Some(Unlimited)
        }
    );
    assert_eq!(
        r.files_read,
        [
            MAIN,
            "/etc/security/limits.d/20-nproc.conf",
            "/etc/security/limits.d/90-hpc.conf",
            DAEMON_FILE
        ]
    );
}

/// pam_limits: a user entry outranks a group entry wherever it is, so an entry in
/// limits.conf beats the daemon's file for that user, and the resolution says so.
#[test]
fn a_user_entry_in_another_file_beats_the_daemon_file() {
    let s = sources(
        Some("alice hard memlock 4096\n"),
        vec![daemon(Unlimited, Unlimited)],
    );
    let alice = Subject {
        user: Some("alice".into()),
        uid: Some(1001),
        primary_gid: Some(1001),
        groups: vec![
            GroupRef {
                name: "alice".into(),
                gid: Some(1001),
            },
            GroupRef {
                name: "rdma".into(),
                gid: Some(990),
            },
        ],
    };
    let r = resolve(&s, &alice);
    assert_eq!(set(&r.hard), (Kib(4096), format!("{MAIN}:1")));
    assert_eq!(set(&r.soft), (Unlimited, format!("{DAEMON_FILE}:7")));
    assert!(r.soft_lowered_to_hard);
    let d = r.daemon_file.unwrap();
    assert_eq!(d.soft, DaemonOutcome::Effective);
    match d.hard {
        DaemonOutcome::Overridden { by, domain, reason } => {
            assert_eq!(by.to_string(), format!("{MAIN}:1"));
            assert_eq!(domain, "alice");
            assert!(reason.contains("outranks group entries"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    // A member that matches no user entry is not affected.
    let r = member(&s);
    assert_eq!(r.daemon_file.unwrap().hard, DaemonOutcome::Effective);
}

#[test]
fn a_later_file_overrides_the_daemon_file_for_its_kind() {
    let s = sources(
        Some(""),
        vec![
            dropin("zzz-site.conf", "@rdma - memlock 128\n"),
            daemon(Unlimited, Unlimited),
        ],
    );
    let r = member(&s);
    assert_eq!(
        set(&r.soft),
        (Kib(128), format!("{LIMITS_D}/zzz-site.conf:1"))
    );
    assert_eq!(set(&r.hard).0, Kib(128));
    match r.daemon_file.unwrap().soft {
        DaemonOutcome::Overridden { reason, .. } => {
            assert!(
                reason.contains("zzz-site.conf is read after zz-rdma-manager.conf"),
                "{reason}"
            )
        }
        other => panic!("{other:?}"),
    }
    // An earlier drop-in of the same kind does not.
    let s = sources(
        Some(""),
        vec![
            dropin("99-site.conf", "@rdma - memlock 128\n"),
            daemon(Unlimited, Unlimited),
        ],
    );
    let d = member(&s).daemon_file.unwrap();
    assert_eq!(
        (d.soft, d.hard),
        (DaemonOutcome::Effective, DaemonOutcome::Effective)
    );
}

#[test]
fn a_no_limits_line_stops_pam_limits() {
    let s = sources(Some("* - \n@rdma -\n"), vec![daemon(Unlimited, Unlimited)]);
    let r = member(&s);
    let origin = Origin {
        file: MAIN.into(),
        line: 2,
    };
    assert_eq!(
        r.no_limits,
        Some(NoLimitsLine {
            origin: origin.clone(),
            domain: "@rdma".into()
        })
    );
    assert!(matches!(&r.soft, LimitSetting::NotSet { why } if why.contains("no limits")));
    assert_eq!(r.files_read, [MAIN]);
    let d = r.daemon_file.unwrap();
    assert_eq!(
        d.hard,
        DaemonOutcome::NoLimitsLine {
            by: origin,
            domain: "@rdma".into()
        }
    );
    // "* -" alone never applies; the daemon's file is read and effective.
    let r = member(&sources(Some("* -\n"), vec![daemon(Unlimited, Unlimited)]));
    assert_eq!(r.no_limits, None);
    assert_eq!(set(&r.soft).0, Unlimited);
}

#[test]
fn odd_but_valid_lines() {
    let main = "\
  @rdma\tsoft\tmemlock\t1024   # pinned buffers\n\
@rdma HARD MemLock UNLIMITED\n\
\n\
   # a comment with @rdma soft memlock 1\n";
    let r = member(&sources(Some(main), vec![]));
    assert_eq!(set(&r.soft), (Kib(1024), format!("{MAIN}:1")));
    assert_eq!(set(&r.hard), (Unlimited, format!("{MAIN}:2")));
    assert!(r.notes.is_empty(), "{:?}", r.notes);
    for (value, want) in [
        ("64M", Kib(64)),
        ("-1", Unlimited),
        ("-", Unlimited),
        ("Infinity", Unlimited),
        ("-5", Unlimited),
        ("+7", Kib(7)),
        ("0", Kib(0)),
        ("18014398509481983", Unlimited),
        ("18014398509481982", Kib(18_014_398_509_481_982)),
        ("99999999999999999999999", Unlimited),
        ("1024 extra words", Kib(1024)),
    ] {
        let r = member(&sources(
            Some(&format!("@rdma soft memlock {value}\n")),
            vec![],
        ));
        assert_eq!(r.soft.value(), Some(want), "{value}");
    }
}

#[test]
fn dash_type_and_default_entries() {
    // '*' alone applies to everyone, as a default entry.
    let r = member(&sources(Some("*  soft  memlock  64\n"), vec![]));
    assert!(matches!(
        r.soft,
        LimitSetting::Set {
            value: Kib(64),
            class: DomainClass::Default,
            ..
        }
    ));
    assert_eq!(r.hard.value(), None);
    // '-' sets both, and a later group line of one type replaces only that type.
    let r = member(&sources(
        Some("@rdma\t-\tmemlock\tunlimited\n"),
        vec![dropin("50-site.conf", "@rdma hard memlock 4096\n")],
    ));
    assert_eq!(set(&r.soft), (Unlimited, format!("{MAIN}:1")));
    assert_eq!(
        set(&r.hard),
        (Kib(4096), format!("{LIMITS_D}/50-site.conf:1"))
    );
    assert!(r.soft_lowered_to_hard);
}

#[test]
fn lines_pam_limits_skips_or_ignores() {
    let main = "\
@rdma soft memlock abc\n\
@rdma soft\n\
@rdma both memlock 5\n\
%rdma hard memlock 5\n\
1000:abc hard memlock 5\n\
@rdma hard nofile 5\n\
bob hard memlock 5\n";
    let r = member(&sources(Some(main), vec![]));
    assert_eq!(r.soft.value(), None);
    assert_eq!(r.hard.value(), None);
    let kinds: Vec<(u32, NoteKind)> = r.notes.iter().map(|n| (n.origin.line, n.kind)).collect();
    assert_eq!(
        kinds,
        [
            (1, NoteKind::Skipped),
            (2, NoteKind::Skipped),
            (3, NoteKind::Skipped),
            (4, NoteKind::Ignored),
            (5, NoteKind::Skipped),
        ]
    );
    assert!(r.notes[0].reason.contains("wrong limit value"));
    assert!(r.notes[3].reason.contains("maxlogins"));
}

/// Linux-PAM 1.6.0+ keeps a CRLF file's `\r` in the value, so `unlimited\r` is a wrong
/// value there, while older versions (sscanf) read `unlimited`.
#[test]
fn crlf_values_depend_on_the_version() {
    let r = member(&sources(
        Some("@rdma soft memlock unlimited\r\n@rdma hard memlock 2048\r\n"),
        vec![],
    ));
    assert_eq!(r.soft.value(), None);
    assert_eq!(r.hard.value(), Some(Kib(2048)));
    let kinds: Vec<(u32, NoteKind)> = r.notes.iter().map(|n| (n.origin.line, n.kind)).collect();
    assert_eq!(
        kinds,
        [(1, NoteKind::VersionDependent), (1, NoteKind::Skipped)]
    );
    assert!(
        r.notes[0].reason.contains("unlimited"),
        "{}",
        r.notes[0].reason
    );
    // Words after the value: the same split.
    let r = member(&sources(
        Some("@rdma soft memlock unlimited please\n"),
        vec![],
    ));
    assert_eq!(r.soft.value(), None);
    assert_eq!(r.notes[0].kind, NoteKind::VersionDependent);
}

/// process_limit(): for '-', a soft part outranked by an earlier, more specific entry
/// returns before the hard part is looked at.
#[test]
fn a_dash_line_cut_short_sets_no_hard_limit() {
    let s = sources(
        Some("alice soft memlock 10\n"),
        vec![dropin("x.conf", "@rdma - memlock 20\n")],
    );
    let alice = Subject {
        user: Some("alice".into()),
        uid: None,
        primary_gid: None,
        groups: vec![GroupRef {
            name: "rdma".into(),
            gid: None,
        }],
    };
    let r = resolve(&s, &alice);
    assert_eq!(set(&r.soft).0, Kib(10));
    assert_eq!(r.hard.value(), None);
    assert_eq!(r.notes.len(), 1);
    assert_eq!(r.notes[0].kind, NoteKind::Ignored);
    let r = member(&s);
    assert_eq!(
        (r.soft.value(), r.hard.value()),
        (Some(Kib(20)), Some(Kib(20)))
    );
}

#[test]
fn uid_and_gid_ranges() {
    let main = "\
@:990 hard memlock 64\n\
1000: soft memlock 32\n\
@900:999 soft memlock 16\n";
    // rdma's gid known (990): both gid entries apply, the uid range depends on the member.
    let r = resolve_group_member(&sources(Some(main), vec![]), RDMA_GROUP, Some(990));
    assert_eq!(set(&r.hard), (Kib(64), format!("{MAIN}:1")));
    assert_eq!(set(&r.soft), (Kib(16), format!("{MAIN}:3")));
    assert_eq!(r.conditional.len(), 1);
    assert_eq!(r.conditional[0].origin.line, 2);
    assert!(r.conditional[0].reason.contains("uid is 1000 or more"));
    // Gid unknown: the gid entries are conditional too.
    let r = member(&sources(Some(main), vec![]));
    assert_eq!((r.soft.value(), r.hard.value()), (None, None));
    assert_eq!(r.conditional.len(), 3);
    // A known user: the uid range is a user entry and outranks the group's.
    let u = Subject {
        user: Some("carol".into()),
        uid: Some(1500),
        primary_gid: Some(990),
        groups: vec![GroupRef {
            name: "rdma".into(),
            gid: Some(990),
        }],
    };
    let r = resolve(&sources(Some(main), vec![]), &u);
    assert_eq!(set(&r.soft), (Kib(32), format!("{MAIN}:2")));
    assert!(matches!(
        r.soft,
        LimitSetting::Set {
            class: DomainClass::User,
            ..
        }
    ));
    // A uid-range "no limits" line that may apply is conditional.
    let r = member(&sources(
        Some("1000:2000 -\n@rdma soft memlock 1\n"),
        vec![],
    ));
    assert_eq!(r.no_limits, None);
    assert_eq!(r.conditional.len(), 1);
    assert_eq!(set(&r.soft).0, Kib(1));
}

#[test]
fn drop_in_order_is_pam_limits_order() {
    let names: Vec<String> = [
        "zzz.conf",
        "zz-rdma-manager.conf",
        "a.conf",
        "A.conf",
        "9-b.conf",
        "10-a.conf",
        ".hidden.conf",
        "notes.txt",
        "x.conf.rpmsave",
        "20-nproc.conf",
    ]
    .map(String::from)
    .to_vec();
    assert_eq!(
        dropin_names(&names),
        [
            "10-a.conf",
            "20-nproc.conf",
            "9-b.conf",
            "A.conf",
            "a.conf",
            "zz-rdma-manager.conf",
            "zzz.conf"
        ]
    );
    // resolve() orders and filters by itself.
    let s = sources(
        None,
        vec![
            dropin("b.conf", "@rdma soft memlock 2\n"),
            dropin(".x.conf", "@rdma soft memlock 3\n"),
            dropin("a.conf", "@rdma soft memlock 1\n"),
            dropin("c.conf.bak", "@rdma soft memlock 4\n"),
        ],
    );
    let r = member(&s);
    assert_eq!(set(&r.soft).0, Kib(2));
    assert_eq!(r.files_read.len(), 2);
    assert!(r.caveats[0].contains("missing"));
}

#[test]
fn rendering_and_reading_back() {
    let text = render_daemon_file(RDMA_GROUP, Kib(65536), Unlimited).unwrap();
    assert!(text.starts_with("# Managed by rdma-managerd"));
    assert!(text.ends_with("@rdma soft memlock 65536\n@rdma hard memlock unlimited\n"));
    assert!(text
        .lines()
        .all(|l| l.starts_with('#') || l.starts_with("@rdma ")));
    assert_eq!(
        read_daemon_file(text.as_bytes(), RDMA_GROUP),
        DaemonSettings {
            soft: Some(Kib(65536)),
            hard: Some(Unlimited)
        }
    );
    let r = member(&sources(None, vec![daemon(Kib(65536), Unlimited)]));
    assert_eq!(set(&r.soft), (Kib(65536), format!("{DAEMON_FILE}:7")));
    // A daemon file setting only one type: the other is NoEntry.
    let only_hard = LimitsFile {
        path: DAEMON_FILE.into(),
        bytes: b"@rdma hard memlock unlimited\n".to_vec(),
    };
    let d = member(&sources(None, vec![only_hard])).daemon_file.unwrap();
    assert_eq!(
        (d.soft, d.hard),
        (DaemonOutcome::NoEntry, DaemonOutcome::Effective)
    );
    // Not a member: the daemon's lines do not apply.
    let r = resolve(
        &sources(None, vec![daemon(Unlimited, Unlimited)]),
        &Subject::member_of("users", None),
    );
    assert_eq!(r.daemon_file.unwrap().soft, DaemonOutcome::NotForThisUser);
}

#[test]
fn values_and_groups_are_validated() {
    assert_eq!(MemlockValue::parse_setting("unlimited"), Ok(Unlimited));
    assert_eq!(MemlockValue::parse_setting("1"), Ok(Kib(1)));
    for bad in [
        "",
        "0",
        "-1",
        "+5",
        "64M",
        " 5",
        "infinity",
        "Unlimited",
        "1.5",
    ] {
        assert!(MemlockValue::parse_setting(bad).is_err(), "{bad:?}");
    }
    assert_eq!(
        MemlockValue::parse_setting("18014398509481983"),
        Err(MemlockError::TooLarge {
            kib: "18014398509481983".into()
        })
    );
    // Beyond 64 bits: the number is quoted as given, not as the largest u64.
    let e = MemlockValue::parse_setting("99999999999999999999999").expect_err("too large");
    assert!(
        e.to_string().starts_with("99999999999999999999999 KiB"),
        "{e}"
    );
    assert!(!e.to_string().contains("18446744073709551615"), "{e}");
    assert_eq!(
        render_daemon_file(RDMA_GROUP, Unlimited, Kib(1024)),
        Err(MemlockError::SoftAboveHard {
            soft: Unlimited,
            hard: Kib(1024)
        })
    );
    assert!(render_daemon_file(RDMA_GROUP, Kib(0), Kib(1)).is_err());
    assert!(render_daemon_file(RDMA_GROUP, Kib(1), Kib(1)).is_ok());
    for bad in [
        "",
        "-x",
        "rd ma",
        "rdma#",
        "1000:",
        "@rdma",
        &"g".repeat(33),
    ] {
        assert!(
            render_daemon_file(bad, Unlimited, Unlimited).is_err(),
            "{bad:?}"
        );
    }
    let msg = MemlockError::SoftAboveHard {
        soft: Unlimited,
        hard: Kib(1024),
    }
    .to_string();
    assert!(
        msg.contains("unlimited") && msg.contains("1024 KiB"),
        "{msg}"
    );
}

#[test]
fn root_on_debian_is_a_caveat() {
    let root = Subject {
        user: Some("root".into()),
        uid: Some(0),
        primary_gid: Some(0),
        groups: vec![GroupRef {
            name: "root".into(),
            gid: Some(0),
        }],
    };
    let r = resolve(&sources(Some(DEBIAN_LIMITS_CONF), vec![]), &root);
    assert!(r.caveats.iter().any(|c| c.contains("Debian")));
}
