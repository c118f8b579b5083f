//! rdma-managerd's own methods under real polkitd on a private system bus with the project's
//! bus policy: root may change things, an unprivileged user is refused for every mutating
//! method (found by introspection, so a method added later is covered without editing this
//! test) and nothing changes; the shipped example rule grants a member of group `rdma` nothing
//! without an active login session, and a group rule (the harness's grant) does grant.

use anyhow::{Context, Result};
use rdma_manager_dbus::{BUS_NAME, ROOT_PATH};
use rdma_manager_tests::audit_log;
use rdma_manager_tests::bus::{Credentials, PolkitConfig, PrivateBus, Reply};
use rdma_manager_tests::service::{attr, own_interfaces, SystemSetup as Setup};
use rdma_managerd::kernel::prelude::*;

/// Methods that only read; every other method of our interfaces must ask polkit.
const READ_ONLY: [&str; 12] = [
    "GetThroughputHistory",
    "GetThroughputHistoryCoarse",
    "GetCounters",
    "GetAllCounters",
    "PreviewRdmaNames",
    "GetIpSettings",
    "GetState",
    "DiffState",
    "CheckHealth",
    "GetLinkResponder",
    "RecentLinkTests",
    "GetQosProfile",
];

/// A state document with one change of RoCE: what ApplyState is called with (a document that
/// changes nothing asks polkit for nothing).
const ROCE_STATE: &str = "roce: [{device: mlx5_1, port: 1, tos: 7}]";

/// (object, interface, method, input signature) of every method of our interfaces on the
/// objects of the demo host, from live introspection.
async fn our_methods(bus: &PrivateBus) -> Result<Vec<(String, String, String, String)>> {
    let conn = bus.connect().await?;
    let mut objects = vec![ROOT_PATH.to_string()];
    let om = zbus::fdo::ObjectManagerProxy::builder(&conn)
        .destination(BUS_NAME)?
        .path(ROOT_PATH)?
        .build()
        .await?;
    // Every object: the demo host has a handful.
    for (path, ifaces) in om.get_managed_objects().await? {
        if !ifaces.is_empty() {
            objects.push(path.to_string());
        }
    }
    let mut out = Vec::new();
    for path in objects {
        let xml = zbus::fdo::IntrospectableProxy::builder(&conn)
            .destination(BUS_NAME)?
            .path(path.clone())?
            .build()
            .await?
            .introspect()
            .await?;
        for (iface, body) in own_interfaces(&xml) {
            if !iface.starts_with(BUS_NAME) {
                continue;
            }
            let mut method: Option<(String, String)> = None;
            for line in body.lines().map(str::trim) {
                if let Some(n) = attr(line, "<method name=") {
                    method = Some((n, String::new()));
                } else if line.starts_with("<arg") && line.contains("direction=\"in\"") {
                    if let (Some((_, sig)), Some(t)) = (method.as_mut(), attr(line, "type=")) {
                        sig.push_str(&t);
                    }
                } else if line.starts_with("</method>") {
                    if let Some((m, sig)) = method.take() {
                        out.push((path.clone(), iface.clone(), m, sig));
                    }
                }
            }
        }
    }
    // One object per (interface, method) is enough.
    out.sort_by(|a, b| (&a.1, &a.2).cmp(&(&b.1, &b.2)));
    out.dedup_by(|a, b| a.1 == b.1 && a.2 == b.2);
    Ok(out)
}

/// busctl arguments of some type-correct value for each signature character.
fn dummy_args(sig: &str) -> Vec<String> {
    let mut v = vec![sig.to_string()];
    let mut chars = sig.chars().peekable();
    while let Some(c) = chars.next() {
        v.push(match c {
            's' => "rxe7".into(),
            'o' => "/".into(),
            'b' => "false".into(),
            // An empty array: skip its element type (one basic type or a `{..}`/`(..)` group).
            'a' => {
                let mut depth = 0;
                for e in chars.by_ref() {
                    match e {
                        '{' | '(' => depth += 1,
                        '}' | ')' => depth -= 1,
                        'a' => continue,
                        _ => {}
                    }
                    if depth == 0 {
                        break;
                    }
                }
                "0".into()
            }
            _ => "1".into(),
        });
    }
    if sig.is_empty() {
        v.clear();
    }
    v
}

#[test]
fn dummy_arguments_follow_the_signature() {
    assert_eq!(dummy_args(""), Vec::<String>::new());
    assert_eq!(dummy_args("sss"), ["sss", "rxe7", "rxe7", "rxe7"]);
    assert_eq!(dummy_args("qsa{sv}"), ["qsa{sv}", "1", "rxe7", "0"]);
    assert_eq!(dummy_args("a(qs)b"), ["a(qs)b", "0", "false"]);
}

/// Every netdev with its IPoIB settings, as the simulated kernel has them.
fn netdevs(t: &Setup) -> Vec<String> {
    t.sim
        .spec()
        .netdevs
        .iter()
        .map(|n| format!("{} mtu {} {:?}", n.name, n.mtu, n.ipoib))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unprivileged_user_is_refused_every_change_and_nothing_changes() -> Result<()> {
    rdma_manager_tests::audit_test_alone!(
        an_unprivileged_user_is_refused_every_change_and_nothing_changes
    );
    require_harness!();
    let t = Setup::new(false, PolkitConfig::rdma_manager()).await?;
    let methods = our_methods(&t.bus).await?;
    let mutating: Vec<_> = methods
        .iter()
        .filter(|m| !READ_ONLY.contains(&m.2.as_str()))
        .collect();
    assert!(
        mutating.iter().any(|m| m.2 == "AddSoftLink")
            && mutating.iter().any(|m| m.2 == "RemoveSoftLink")
            && mutating.iter().any(|m| m.2 == "SetRoceMode")
            && mutating.iter().any(|m| m.2 == "SetRoceTos"),
        "{methods:?}"
    );
    for want in [
        "CreateChild",
        "Delete",
        "SetMode",
        "SetMtu",
        "SetUmcast",
        "SetModuleEnabled",
        "ApplyModules",
        "SetMemlockLimits",
        "ResetMemlockLimits",
        "SetNfsRdma",
        "StartSubnetManager",
        "StopSubnetManager",
        "SetSubnetManagerEnabled",
        "SetIpSettings",
        "Activate",
        "Deactivate",
        "ApplyState",
        "TestLink",
        "SetLinkResponder",
        "SetPortType",
        "SetQosProfile",
    ] {
        assert!(mutating.iter().any(|m| m.2 == want), "{want}: {methods:?}");
    }
    let user = Credentials::test_user(false);
    refused_every_change(&t, &user, &mutating).await?;
    // The read-only methods stay open to everyone.
    for (path, iface, method, _) in methods.iter().filter(|m| READ_ONLY.contains(&m.2.as_str())) {
        if method == "GetIpSettings" {
            // No IP manager here: still answered (the kernel's addresses), to anyone.
            let reply = t
                .call(Some(&user), path, iface, method, &["s", "eth0"])
                .await?;
            assert!(
                matches!(&reply, Reply::Ok(text) if text.contains(r#""manager" s "none""#)),
                "{path} {iface}.{method}: {reply:?}"
            );
            continue;
        }
        if method == "GetQosProfile" {
            // Answered to anyone: the profile, or NotSupported where the port has no DCB.
            let reply = t.call(Some(&user), path, iface, method, &[]).await?;
            assert!(
                matches!(&reply, Reply::Ok(_))
                    || matches!(&reply, Reply::Err(n, _) if n == "NotSupported"),
                "{path} {iface}.{method}: {reply:?}"
            );
            continue;
        }
        let args: &[&str] = match method.as_str() {
            "GetState" => &["s", "yaml"],
            "DiffState" => &["s", ROCE_STATE],
            "CheckHealth" => &["s", "health: {min-ports: 1}"],
            _ => &[],
        };
        let reply = t.call(Some(&user), path, iface, method, args).await?;
        assert!(
            matches!(reply, Reply::Ok(_)),
            "{path} {iface}.{method}: {reply:?}"
        );
    }
    Ok(())
}

/// The shipped example rule, as shipped: a member of group `rdma` whose call comes from no
/// login session (as a daemon, a cron job, this test harness: there is no logind here, so
/// polkit's `subject.active` is false) gets nothing from it, for every action.
#[tokio::test(flavor = "multi_thread")]
async fn the_shipped_group_rule_grants_nothing_without_an_active_session() -> Result<()> {
    rdma_manager_tests::audit_test_alone!(
        the_shipped_group_rule_grants_nothing_without_an_active_session
    );
    require_harness!();
    let t = Setup::new(true, PolkitConfig::rdma_manager().rdma_group_rule()).await?;
    let methods = our_methods(&t.bus).await?;
    let mutating: Vec<_> = methods
        .iter()
        .filter(|m| !READ_ONLY.contains(&m.2.as_str()))
        .collect();
    let member = Credentials::test_user(true);
    refused_every_change(&t, &member, &mutating).await
}

/// Calls every method of `mutating` as `user` and checks that each is refused by polkit,
/// changes nothing, and leaves one audit line saying who was refused what.
async fn refused_every_change(
    t: &Setup,
    user: &Credentials,
    mutating: &[&(String, String, String, String)],
) -> Result<()> {
    let before = t.device_names();
    let netdevs_before = netdevs(t);
    audit_log::catch();
    let _ = audit_log::taken();
    for (path, iface, method, sig) in mutating.iter().copied() {
        let args = dummy_args(sig);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        // Aim at something real where the method names a device.
        let args: Vec<&str> = match method.as_str() {
            "RemoveSoftLink" => vec!["s", "rxe0"],
            "ApplyState" => vec!["su", ROCE_STATE, "0"],
            _ => args,
        };
        let reply = t.call(Some(user), path, iface, method, &args).await?;
        match &reply {
            Reply::Err(name, msg) => {
                assert_eq!(name, "NotAuthorized", "{iface}.{method}: {msg}");
                assert!(msg.contains("org.rdmamanager.rdmamanager1."), "{msg}");
            }
            Reply::Ok(out) => panic!("{iface}.{method} succeeded for an unprivileged user: {out}"),
        }
        let lines = audit_log::taken();
        assert_eq!(
            lines.len(),
            1,
            "{iface}.{method}: one audit line: {lines:?}"
        );
        let line = &lines[0];
        let uid = user.uid.to_string();
        for (field, want) in [
            ("method", method.as_str()),
            ("object", path.as_str()),
            ("outcome", "refused"),
            ("caller_uid", uid.as_str()),
            ("error", "org.rdmamanager.RdmaManager1.Error.NotAuthorized"),
        ] {
            assert_eq!(
                line.get(field).map(String::as_str),
                Some(want),
                "{field}: {line:?}"
            );
        }
        assert_eq!(
            t.device_names(),
            before,
            "{iface}.{method} changed the host"
        );
        assert_eq!(
            netdevs(t),
            netdevs_before,
            "{iface}.{method} changed a netdev"
        );
    }
    for file in [
        "/etc/rdma-manager/roce.toml",
        "/etc/rdma-manager/ipoib.toml",
    ] {
        assert_eq!(t.etc_file(file), None, "nothing was persisted in {file}");
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn root_may_add_and_remove_a_soft_link() -> Result<()> {
    rdma_manager_tests::audit_test_alone!(root_may_add_and_remove_a_soft_link);
    require_harness!();
    audit_log::catch();
    let t = Setup::new(false, PolkitConfig::rdma_manager()).await?;
    let _ = audit_log::taken();
    let reply = t
        .manager(None, "AddSoftLink", &["sss", "rxe9", "rxe", "eth0"])
        .await?;
    // eth0 already carries rxe0 in the demo host: the kernel's refusal, explained.
    let Reply::Err(name, msg) = reply else {
        panic!("a second rxe on eth0 must be refused: {reply:?}");
    };
    assert_eq!(name, "AlreadyExists", "{msg}");
    assert!(msg.contains("rxe0") && msg.contains("eth0"), "{msg}");

    let reply = t.manager(None, "RemoveSoftLink", &["s", "rxe0"]).await?;
    assert!(matches!(reply, Reply::Ok(_)), "{reply:?}");
    assert!(!t.device_names().contains(&"rxe0".to_string()));
    let reply = t
        .manager(None, "AddSoftLink", &["sss", "rxe9", "rxe", "eth0"])
        .await?;
    let Reply::Ok(out) = reply else {
        panic!("root may add a link: {reply:?}");
    };
    assert!(
        out.starts_with("o \"/org/rdmamanager/RdmaManager1/Device/"),
        "{out}"
    );
    assert!(t.device_names().contains(&"rxe9".to_string()));
    // Each change left one audit line: who (root), what, and the outcome.
    let outcomes: Vec<(String, String, String, String)> = audit_log::taken()
        .into_iter()
        .map(|l| {
            let get = |k: &str| l.get(k).cloned().unwrap_or_default();
            (
                get("method"),
                get("arguments"),
                get("outcome"),
                get("caller_uid"),
            )
        })
        .collect();
    let line =
        |m: &str, a: &str, o: &str| (m.to_string(), a.to_string(), o.to_string(), "0".to_string());
    assert_eq!(
        outcomes,
        [
            line(
                "AddSoftLink",
                r#"name="rxe9" type="rxe" netdev="eth0""#,
                "failed"
            ),
            line("RemoveSoftLink", r#"name="rxe0""#, "done"),
            line(
                "AddSoftLink",
                r#"name="rxe9" type="rxe" netdev="eth0""#,
                "done"
            ),
        ]
    );

    // A bad name is refused before the kernel sees it.
    let reply = t
        .manager(None, "AddSoftLink", &["sss", "bad/name", "rxe", "eth0"])
        .await?;
    assert!(
        matches!(&reply, Reply::Err(n, _) if n == "InvalidArgument"),
        "{reply:?}"
    );

    // Each other class of bad input: its typed error, and the host unchanged.
    let before = t.device_names();
    for (method, args, want) in [
        (
            "AddSoftLink",
            &["sss", "rxe8", "roce", "eth0"][..],
            "InvalidArgument",
        ),
        (
            "AddSoftLink",
            &["sss", "rxe8", "rxe", "nosuch0"][..],
            "NotFound",
        ),
        (
            "AddSoftLink",
            &["sss", "", "rxe", "eth0"][..],
            "InvalidArgument",
        ),
        ("RemoveSoftLink", &["s", "nosuch"][..], "NotFound"),
        ("RemoveSoftLink", &["s", "mlx4_1"][..], "InvalidArgument"),
    ] {
        let reply = t.manager(None, method, args).await?;
        assert!(
            matches!(&reply, Reply::Err(n, _) if n == want),
            "{method} {args:?}: {reply:?}"
        );
        assert_eq!(
            t.device_names(),
            before,
            "{method} {args:?} changed the host"
        );
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn root_may_create_and_delete_an_ipoib_child() -> Result<()> {
    require_harness!();
    let t = Setup::new(false, PolkitConfig::rdma_manager()).await?;
    let ib0 = t
        .sim
        .spec()
        .netdevs
        .iter()
        .find(|n| n.name == "ib0")
        .map(|n| rdma_manager_dbus::ipoib_path(n.ifindex))
        .context("the demo host has ib0")?;
    let iface = "org.rdmamanager.RdmaManager1.Ipoib";
    let reply = t
        .call(
            None,
            &ib0,
            iface,
            "CreateChild",
            &["qsa{sv}", "0x0002", "", "1", "umcast", "b", "true"],
        )
        .await?;
    let Reply::Ok(out) = reply else {
        panic!("root may create a child: {reply:?}");
    };
    let child = out
        .strip_prefix("o \"")
        .and_then(|p| p.strip_suffix('"'))
        .with_context(|| format!("an object path: {out}"))?
        .to_string();
    assert!(t.sim.spec().netdevs.iter().any(|n| n.name == "ib0.0002"));
    assert!(t.etc_file("/etc/rdma-manager/ipoib.toml").is_some());
    let reply = t.call(None, &child, iface, "Delete", &[]).await?;
    assert!(matches!(reply, Reply::Ok(_)), "{reply:?}");
    assert!(!t.sim.spec().netdevs.iter().any(|n| n.name == "ib0.0002"));
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_group_rule_grants_group_rdma() -> Result<()> {
    require_harness!();
    // The harness's grant, not the shipped rule (which needs an active session).
    let t = Setup::new(true, PolkitConfig::rdma_manager().harness_group_grant()).await?;
    let member = Credentials::test_user(true);
    let reply = t
        .manager(Some(&member), "RemoveSoftLink", &["s", "rxe0"])
        .await?;
    assert!(matches!(reply, Reply::Ok(_)), "{reply:?}");
    assert!(!t.device_names().contains(&"rxe0".to_string()));
    // Taken out of the group, the same user is refused.
    t.users.set_in_rdma_group(false)?;
    let reply = t
        .manager(
            Some(&Credentials::test_user(false)),
            "AddSoftLink",
            &["sss", "rxe0", "rxe", "eth0"],
        )
        .await?;
    assert!(
        matches!(&reply, Reply::Err(n, _) if n == "NotAuthorized"),
        "{reply:?}"
    );
    Ok(())
}

/// ApplyState asks polkit for the action of every area its document changes, all before the
/// first change: a caller granted two areas but not a third is refused with nothing changed
/// (one audit line, the refused action's), and the same caller may apply the two areas it has.
#[tokio::test(flavor = "multi_thread")]
async fn apply_state_asks_each_area_and_a_refused_area_changes_nothing() -> Result<()> {
    rdma_manager_tests::audit_test_alone!(
        apply_state_asks_each_area_and_a_refused_area_changes_nothing
    );
    require_harness!();
    let grant = r#"polkit.addRule(function(action, subject) {
    if ((action.id == "org.rdmamanager.rdmamanager1.manage-links" ||
         action.id == "org.rdmamanager.rdmamanager1.manage-roce") && subject.isInGroup("rdma")) {
        return polkit.Result.YES;
    }
});
"#;
    audit_log::catch();
    let t = Setup::new(
        true,
        PolkitConfig::rdma_manager().rules("90-links-and-roce.rules", grant),
    )
    .await?;
    let _ = audit_log::taken();
    let member = Credentials::test_user(true);
    let links_and_roce = "soft-links: [{name: rxe1, type: rxe, netdev: enp59s0f1np1}]\n\
                          roce: [{device: mlx5_1, port: 1, tos: 7}]\n";
    let with_host = format!("{links_and_roce}memlock: {{soft: unlimited, hard: unlimited}}\n");
    let before = t.device_names();
    let reply = t
        .manager(Some(&member), "ApplyState", &["su", &with_host, "0"])
        .await?;
    match &reply {
        Reply::Err(name, msg) => {
            assert_eq!(name, "NotAuthorized", "{msg}");
            assert!(msg.contains("manage-host"), "{msg}");
        }
        Reply::Ok(out) => panic!("a refused area must refuse the whole state: {out}"),
    }
    assert_eq!(t.device_names(), before, "nothing changed");
    assert_eq!(t.sim.roce_tos("mlx5_1", 1).await.ok(), Some(0));
    assert_eq!(
        t.etc_file("/etc/security/limits.d/zz-rdma-manager.conf"),
        None
    );
    let lines = audit_log::taken();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(
        lines[0].get("action").map(String::as_str),
        Some("org.rdmamanager.rdmamanager1.manage-host")
    );
    assert_eq!(lines[0].get("outcome").map(String::as_str), Some("refused"));

    let reply = t
        .manager(Some(&member), "ApplyState", &["su", links_and_roce, "0"])
        .await?;
    assert!(matches!(reply, Reply::Ok(_)), "{reply:?}");
    assert!(t.device_names().contains(&"rxe1".to_string()));
    assert_eq!(t.sim.roce_tos("mlx5_1", 1).await.ok(), Some(7));
    // One line for each action asked, both done.
    let mut asked: Vec<(String, String)> = audit_log::taken()
        .into_iter()
        .map(|l| {
            let get = |k: &str| l.get(k).cloned().unwrap_or_default();
            (get("action"), get("outcome"))
        })
        .collect();
    asked.sort();
    assert_eq!(
        asked,
        [
            (
                "org.rdmamanager.rdmamanager1.manage-links".to_string(),
                "done".to_string()
            ),
            (
                "org.rdmamanager.rdmamanager1.manage-roce".to_string(),
                "done".to_string()
            ),
        ]
    );
    Ok(())
}
