//! The one-shot changes: each checks its input with the daemon's rules, makes its calls and
//! prints one line saying what was done, as nmcli does ("... successfully added.").

use std::collections::HashMap;

use rdma_manager_dbus::proxies::{DeviceProxy, HostSetupProxy};
use rdma_manager_dbus::types::HostStep;
use rdma_manager_dbus::HOST_PATH;
use rdma_manager_model::ipoib::IpoibMode;
use zbus::zvariant::Value;
use zbus::Connection;

use crate::args::{IpoibCommand, LinkCommand, NamingCommand, RoceSetting, SmAction, VfGuidCommand};
use crate::bus::{self, Objects};
use crate::check::{self, IpValue, IP_KEYS};
use crate::failure::{code, Failure};
use crate::output::{Format, Table};
use crate::{pending, words};

pub async fn link(conn: &Connection, cmd: LinkCommand) -> Result<u8, Failure> {
    match cmd {
        LinkCommand::Add { name, settings } => {
            check::rdma_name("name", &name)?;
            let kv = words::pairs(&settings, &["type", "netdev"])?;
            let (Some(kind), Some(netdev)) = (kv.get("type"), kv.get("netdev")) else {
                return Err(Failure::usage(
                    "link add needs: NAME type rxe|siw netdev DEV",
                ));
            };
            let kind = check::link_kind(kind)?;
            check::netdev_name("netdev", netdev)?;
            let path = bus::manager(conn)
                .await?
                .add_soft_link(&name, kind, netdev)
                .await?;
            println!("Soft link '{name}' ({kind} over {netdev}) successfully added ({path}).");
        }
        LinkCommand::Delete { name } => {
            check::rdma_name("name", &name)?;
            bus::manager(conn).await?.remove_soft_link(&name).await?;
            println!("Soft link '{name}' successfully deleted.");
        }
    }
    Ok(code::SUCCESS)
}

pub async fn roce(
    conn: &Connection,
    port: &str,
    setting: RoceSetting,
    value: &str,
) -> Result<u8, Failure> {
    // The value first: bad input is refused without a call.
    enum Wanted {
        Mode(&'static str),
        Tos(u8),
    }
    let wanted = match setting {
        RoceSetting::Mode => Wanted::Mode(check::roce_mode(value)?),
        RoceSetting::Tos => Wanted::Tos(check::tos(value)?),
    };
    let path = Objects::read(conn).await?.port(port)?;
    let proxy = bus::port_proxy(conn, &path).await?;
    match wanted {
        Wanted::Mode(m) => {
            proxy.set_roce_mode(m).await?;
            println!("RoCE mode of {port} successfully set to {m}.");
        }
        Wanted::Tos(t) => {
            proxy.set_roce_tos(t).await?;
            println!("RoCE type of service of {port} successfully set to {t}.");
        }
    }
    Ok(code::SUCCESS)
}

pub async fn port_type(conn: &Connection, port: &str, value: &str) -> Result<u8, Failure> {
    // The value first: bad input is refused without a call.
    let ty = rdma_manager_model::port_type::PortType::parse(value)
        .map_err(|e| Failure::usage(e.to_string()))?;
    let path = Objects::read(conn).await?.port(port)?;
    let proxy = bus::port_proxy(conn, &path).await?;
    proxy.set_port_type(ty.as_str()).await?;
    // mlx5 stages it in firmware: say so rather than pretend it applied.
    if proxy.port_type_reboot_needed().await? {
        println!(
            "Port type of {port} staged as {ty} for the next boot (reboot needed; it runs {} until then).",
            proxy.port_type().await?
        );
    } else {
        println!("Port type of {port} successfully set to {ty}.");
    }
    Ok(code::SUCCESS)
}

pub async fn ipoib(conn: &Connection, cmd: IpoibCommand) -> Result<u8, Failure> {
    match cmd {
        IpoibCommand::Add { parent, settings } => {
            check::netdev_name("parent", &parent)?;
            let kv = words::pairs(&settings, &["pkey", "name", "mode", "mtu"])?;
            let Some(pkey) = kv.get("pkey") else {
                return Err(Failure::usage(
                    "ipoib add needs: PARENT pkey 0xNNNN [name NAME] [mode M] [mtu N]",
                ));
            };
            let pkey = check::pkey(pkey)?;
            let name = kv.get("name").cloned().unwrap_or_default();
            if !name.is_empty() {
                check::netdev_name("name", &name)?;
            }
            let mode = kv.get("mode").map(|m| check::ipoib_mode(m)).transpose()?;
            let mtu = kv.get("mtu").map(|m| check::mtu(m, mode)).transpose()?;
            let mut map: HashMap<&str, Value<'_>> = HashMap::new();
            if let Some(m) = mode {
                map.insert("mode", Value::from(m.as_str()));
            }
            if let Some(m) = mtu {
                map.insert("mtu", Value::from(m));
            }
            let objects = Objects::read(conn).await?;
            let (path, _) = objects.ipoib(&parent)?;
            let before = bus::pending_changes(conn).await?;
            let child = bus::ipoib_proxy(conn, &path)
                .await?
                .create_child(pkey, &name, map)
                .await?;
            let child_name = bus::ipoib_proxy(conn, child.as_str())
                .await?
                .name()
                .await
                .unwrap_or(name);
            pending::confirm_new(conn, &before, &child_name).await?;
            println!(
                "IPoIB interface '{child_name}' (P_Key {pkey:#06x} of {parent}) successfully added."
            );
        }
        IpoibCommand::Delete { name } => {
            check::netdev_name("name", &name)?;
            let objects = Objects::read(conn).await?;
            let (path, _) = objects.ipoib(&name)?;
            let before = bus::pending_changes(conn).await?;
            bus::ipoib_proxy(conn, &path).await?.delete().await?;
            pending::confirm_new(conn, &before, &name).await?;
            println!("IPoIB interface '{name}' successfully deleted.");
        }
        IpoibCommand::Set { name, settings } => {
            check::netdev_name("name", &name)?;
            let kv = words::pairs(&settings, &["mode", "mtu", "umcast"])?;
            let mode = kv.get("mode").map(|m| check::ipoib_mode(m)).transpose()?;
            let mtu = kv.get("mtu").map(|m| check::mtu(m, mode)).transpose()?;
            let umcast = kv
                .get("umcast")
                .map(|u| words::on_off("umcast", u))
                .transpose()?;
            let objects = Objects::read(conn).await?;
            let (path, _) = objects.ipoib(&name)?;
            let proxy = bus::ipoib_proxy(conn, &path).await?;
            let before = bus::pending_changes(conn).await?;
            // To datagram the MTU comes down first and to connected it goes up after the
            // mode, so that no step asks for an MTU the mode of the moment refuses.
            let mtu_first = mode == Some(IpoibMode::Datagram);
            if mtu_first {
                if let Some(m) = mtu {
                    proxy.set_mtu(m).await?;
                }
            }
            if let Some(m) = mode {
                proxy.set_mode(m.as_str()).await?;
            }
            if !mtu_first {
                if let Some(m) = mtu {
                    proxy.set_mtu(m).await?;
                }
            }
            if let Some(u) = umcast {
                proxy.set_umcast(u).await?;
            }
            pending::confirm_new(conn, &before, &name).await?;
            let said: Vec<String> = kv.iter().map(|(k, v)| format!("{k} {v}")).collect();
            println!(
                "IPoIB interface '{name}' successfully set: {}.",
                said.join(", ")
            );
        }
    }
    Ok(code::SUCCESS)
}

/// `ip NAME KEY VALUE ...`: through the host's IP manager, confirmed at once unless a timeout
/// leaves it pending.
pub async fn ip(
    conn: &Connection,
    name: &str,
    settings: &[String],
    timeout: Option<u32>,
) -> Result<u8, Failure> {
    check::netdev_name("name", name)?;
    let kv = words::pairs(settings, &IP_KEYS)?;
    let values = check::ip_settings(&kv)?;
    if let Some(t) = timeout {
        if !(10..=3600).contains(&t) {
            return Err(Failure::usage(format!(
                "--timeout {t}: give 10 to 3600 seconds"
            )));
        }
    }
    let map: HashMap<&str, Value<'_>> = values
        .iter()
        .map(|(k, v)| {
            let v = match v {
                IpValue::Text(s) => Value::from(s.as_str()),
                IpValue::List(l) => Value::from(l.clone()),
            };
            (k.as_str(), v)
        })
        .collect();
    let path = bus::network(conn)
        .await?
        .set_ip_settings(name, map, timeout.unwrap_or(0))
        .await?;
    match timeout {
        Some(_) => println!("{}", pending::describe(conn, path.as_str()).await),
        None => {
            pending::confirm(conn, path.as_str()).await?;
            println!("IP settings of '{name}' successfully set.");
        }
    }
    Ok(code::SUCCESS)
}

pub async fn naming(conn: &Connection, cmd: NamingCommand) -> Result<u8, Failure> {
    let m = bus::manager(conn).await?;
    match cmd {
        NamingCommand::Policy { policy, now } => {
            m.set_rdma_naming_policy(policy.as_str(), now).await?;
            println!(
                "RDMA naming policy successfully set to {}{}.",
                policy.as_str(),
                if now { " (devices renamed now)" } else { "" }
            );
        }
        NamingCommand::Fixed {
            node_guid,
            name,
            now,
        } => {
            check::rdma_name("name", &name)?;
            m.set_rdma_fixed_name(&node_guid, &name, now).await?;
            println!("Fixed name '{name}' successfully set for node GUID {node_guid}.");
        }
        NamingCommand::Unfix { node_guid } => {
            m.remove_rdma_fixed_name(&node_guid).await?;
            println!("Fixed name of node GUID {node_guid} successfully removed.");
        }
        NamingCommand::Ipoib {
            port_guid,
            name,
            now,
        } => {
            check::netdev_name("name", &name)?;
            m.set_ipoib_name(&port_guid, &name, now).await?;
            println!("IPoIB name '{name}' successfully set for port GUID {port_guid}.");
        }
        NamingCommand::IpoibRemove { port_guid } => {
            m.remove_ipoib_name(&port_guid).await?;
            println!("IPoIB name of port GUID {port_guid} successfully removed.");
        }
    }
    Ok(code::SUCCESS)
}

async fn host(conn: &Connection) -> Result<HostSetupProxy<'static>, Failure> {
    bus::proxy(conn, HOST_PATH).await
}

/// Host setup's steps (ApplyModules, SetNfsRdma) as a table; a failed step fails the command.
fn print_steps(steps: &[HostStep], format: Format) -> u8 {
    let mut t = Table::new(&["STEP", "OUTCOME", "DETAIL"]);
    for s in steps {
        t.push(vec![s.step.clone(), s.outcome.clone(), s.detail.clone()]);
    }
    print!("{}", t.render(format));
    if steps.iter().any(HostStep::failed) {
        code::FAILED
    } else {
        code::SUCCESS
    }
}

pub async fn modules(conn: &Connection, words: &[String], format: Format) -> Result<u8, Failure> {
    match words {
        [apply, set] if apply == "apply" => {
            let steps = host(conn).await?.apply_modules(set).await?;
            Ok(print_steps(&steps, format))
        }
        [set, module, state] => {
            let enabled = words::on_off(module, state)?;
            host(conn)
                .await?
                .set_module_enabled(set, module, enabled)
                .await?;
            println!(
                "Module {module} successfully {} in set {set}.",
                if enabled { "enabled" } else { "disabled" }
            );
            Ok(code::SUCCESS)
        }
        _ => Err(Failure::usage(
            "modules takes: SET MODULE on|off, or apply SET",
        )),
    }
}

pub async fn memlock(conn: &Connection, words: &[String]) -> Result<u8, Failure> {
    match words {
        [reset] if reset == "reset" => {
            host(conn).await?.reset_memlock_limits().await?;
            println!("Memlock limits successfully reset.");
        }
        [soft, hard] => {
            let (soft, hard) = check::memlock_pair(soft, hard)?;
            let notes = host(conn).await?.set_memlock_limits(&soft, &hard).await?;
            println!("Memlock limits successfully set: soft {soft}, hard {hard}.");
            for n in notes {
                println!("Note: {n}");
            }
        }
        _ => {
            return Err(Failure::usage(
                "memlock takes: SOFT HARD (KiB or unlimited), or reset",
            ))
        }
    }
    Ok(code::SUCCESS)
}

pub async fn nfs(conn: &Connection, words: &[String], format: Format) -> Result<u8, Failure> {
    let Some((state, rest)) = words.split_first() else {
        return Err(Failure::usage("nfs takes: on|off [port N]"));
    };
    let enabled = words::on_off("nfs", state)?;
    let kv = words::pairs(rest, &["port"])?;
    let port = match kv.get("port") {
        Some(p) => check::nfs_port(p)?,
        None => rdma_manager_model::hostconf::nfs_conf::NFSRDMA_PORT,
    };
    let steps = host(conn).await?.set_nfs_rdma(enabled, port).await?;
    Ok(print_steps(&steps, format))
}

pub async fn sm(conn: &Connection, action: SmAction) -> Result<u8, Failure> {
    let h = host(conn).await?;
    let done = match action {
        SmAction::Start => {
            h.start_subnet_manager().await?;
            "started"
        }
        SmAction::Stop => {
            h.stop_subnet_manager().await?;
            "stopped"
        }
        SmAction::Enable => {
            h.set_subnet_manager_enabled(true).await?;
            "enabled"
        }
        SmAction::Disable => {
            h.set_subnet_manager_enabled(false).await?;
            "disabled"
        }
    };
    println!("Subnet manager successfully {done}.");
    Ok(code::SUCCESS)
}

pub async fn vf_guid(conn: &Connection, cmd: VfGuidCommand) -> Result<u8, Failure> {
    use rdma_manager_model::vf_guid::{ip_form, parse_vf_guid, GuidKind};
    match cmd {
        VfGuidCommand::Set {
            device,
            vf,
            node_guid,
            port_guid,
        } => {
            // Bad GUIDs are refused without a call, with the daemon's own rules.
            let node = parse_vf_guid(GuidKind::Node, &node_guid)
                .map_err(|e| Failure::usage(e.to_string()))?;
            let port = parse_vf_guid(GuidKind::Port, &port_guid)
                .map_err(|e| Failure::usage(e.to_string()))?;
            let objects = Objects::read(conn).await?;
            let (path, _) = objects.device(&device)?;
            let proxy: DeviceProxy<'static> = bus::proxy(conn, path.as_str()).await?;
            let (node, port) = (ip_form(node), ip_form(port));
            proxy.set_vf_guids(vf, &node, &port).await?;
            println!(
                "VF {vf} of {device} successfully given node GUID {node} and port GUID {port}."
            );
        }
        VfGuidCommand::Reset { device, vf } => {
            let objects = Objects::read(conn).await?;
            let (path, _) = objects.device(&device)?;
            let proxy: DeviceProxy<'static> = bus::proxy(conn, path.as_str()).await?;
            proxy.reset_vf_guids(vf).await?;
            println!("GUIDs of VF {vf} of {device} forgotten (the driver keeps the current ones until the VFs are destroyed).");
        }
    }
    Ok(code::SUCCESS)
}
