//! `rdma-cli qos DEV/PORT [KEY VALUE]...`: a RoCE port's QoS profile (`Port.GetQosProfile`),
//! or a change of the settings named, the others kept as the port has them
//! (`Port.SetQosProfile` takes the whole profile).

use std::collections::BTreeMap;

use rdma_manager_model::qos::{
    format_dscp_map, format_ets, format_priorities, from_bus, parse_dscp_map, parse_ets,
    parse_priorities, to_bus, Ets, QosProfile, Trust,
};
use zbus::Connection;

use crate::bus::{self, Objects};
use crate::failure::{code, Failure};
use crate::output::{Format, Table};
use crate::words;

const KEYS: [&str; 6] = ["trust", "pfc", "ets", "dscp", "traffic-class", "ecn"];

/// The settings a command line names, parsed (nothing asked of the daemon yet).
#[derive(Debug, Default, PartialEq, Eq)]
struct Named {
    trust: Option<Trust>,
    pfc: Option<Vec<u8>>,
    ets: Option<Option<Ets>>,
    dscp: Option<BTreeMap<u8, u8>>,
    traffic_class: Option<u8>,
    ecn: Option<Vec<u8>>,
}

fn parse(settings: &[String]) -> Result<Named, Failure> {
    let kv = words::pairs(settings, &KEYS)?;
    let usage = |e: rdma_manager_model::qos::QosError| Failure::usage(e.0);
    let mut n = Named::default();
    for (k, v) in &kv {
        match k.as_str() {
            "trust" => n.trust = Some(Trust::parse(v).map_err(usage)?),
            "pfc" => n.pfc = Some(parse_priorities("PFC", v).map_err(usage)?),
            "ets" => n.ets = Some(parse_ets(v).map_err(usage)?),
            "dscp" => n.dscp = Some(parse_dscp_map(v).map_err(usage)?),
            "traffic-class" => {
                n.traffic_class =
                    Some(v.trim().parse().map_err(|_| {
                        Failure::usage(format!("traffic-class {v:?} is not 0 to 255"))
                    })?)
            }
            "ecn" => n.ecn = Some(parse_priorities("ECN", v).map_err(usage)?),
            _ => {}
        }
    }
    Ok(n)
}

/// `now` with the named settings. Trust follows the DSCP map on the bus: `trust pcp` alone
/// drops the map, a map given alone trusts DSCP.
fn merged(now: &QosProfile, n: &Named) -> QosProfile {
    let mut p = now.clone();
    if let Some(d) = &n.dscp {
        p.dscp = d.clone();
        p.trust = if d.is_empty() {
            Trust::Pcp
        } else {
            Trust::Dscp
        };
    }
    if let Some(t) = n.trust {
        p.trust = t;
        if t == Trust::Pcp && n.dscp.is_none() {
            p.dscp.clear();
        }
    }
    if let Some(v) = &n.pfc {
        p.pfc = v.clone();
    }
    if let Some(e) = &n.ets {
        p.ets = e.clone();
    }
    if let Some(t) = n.traffic_class {
        p.traffic_class = Some(t);
    }
    if let Some(e) = &n.ecn {
        p.ecn = Some(e.clone());
    }
    p.normalized()
}

fn table(port: &str, p: &QosProfile, remembered: bool) -> Table {
    let mut t = Table::new(&[
        "PORT",
        "TRUST",
        "PFC",
        "ETS",
        "DSCP",
        "TRAFFIC-CLASS",
        "ECN",
        "REMEMBERED",
    ]);
    let or_empty = |v: Option<String>| v.unwrap_or_default();
    t.push(vec![
        port.to_string(),
        p.trust.name().to_string(),
        format_priorities(&p.pfc),
        or_empty(p.ets.as_ref().map(|e| format_ets(Some(e)))),
        format_dscp_map(&p.dscp),
        or_empty(p.traffic_class.map(|t| t.to_string())),
        or_empty(p.ecn.as_deref().map(format_priorities)),
        if remembered { "yes" } else { "no" }.to_string(),
    ]);
    t
}

pub async fn qos(
    conn: &Connection,
    port: &str,
    settings: &[String],
    format: Format,
) -> Result<u8, Failure> {
    // The values first: bad input is refused without a call.
    let named = parse(settings)?;
    let path = Objects::read(conn).await?.port(port)?;
    let proxy = bus::port_proxy(conn, &path).await?;
    let (reply, remembered) = proxy.get_qos_profile().await?;
    let now = from_bus(&reply).map_err(|e| Failure::failed(format!("the service's reply: {e}")))?;
    if settings.is_empty() {
        print!("{}", table(port, &now, remembered).render(format));
        return Ok(code::SUCCESS);
    }
    let want = merged(&now, &named);
    want.check().map_err(|e| Failure::usage(e.0))?;
    // What the port has and the command does not name is sent as it is, so kept.
    let b = to_bus(&want);
    proxy
        .set_qos_profile(
            b.pfc,
            b.ets_bandwidth,
            b.ets_prio_tc,
            b.dscp,
            b.traffic_class,
            b.ecn,
        )
        .await?;
    println!("QoS profile of {port} successfully set.");
    Ok(code::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    fn mlx5_default() -> QosProfile {
        QosProfile {
            ets: parse_ets("100,0,0,0,0,0,0,0/0,0,0,0,0,0,0,0").unwrap(),
            traffic_class: Some(0),
            ecn: Some(vec![]),
            ..QosProfile::default()
        }
    }

    #[test]
    fn named_settings_change_and_the_rest_is_kept() {
        let n = parse(&words("pfc 3 dscp 26:3 traffic-class 106")).unwrap();
        let p = merged(&mlx5_default(), &n);
        assert_eq!(p.trust, Trust::Dscp, "a DSCP map trusts DSCP");
        assert_eq!(p.pfc, [3]);
        assert_eq!(p.dscp.get(&26), Some(&3));
        assert_eq!(p.traffic_class, Some(106));
        assert_eq!((&p.ets, &p.ecn), (&mlx5_default().ets, &Some(vec![])));
        assert_eq!(p.clone().check(), Ok(()));
        // trust pcp alone drops the map again.
        let back = merged(&p, &parse(&words("trust pcp")).unwrap());
        assert_eq!((back.trust, back.dscp.len()), (Trust::Pcp, 0));
    }

    #[test]
    fn bad_words_are_usage_errors_before_any_call() {
        // Words that do not parse, and profiles that parse but break the rules: both
        // refused (exit 2) before SetQosProfile is called.
        for bad in [
            "pfc 9",
            "trust vlan",
            "dscp 64:3",
            "ets 50,50/0,1",
            "ets 60,60,0,0,0,0,0,0/0,0,0,0,0,0,0,0",
            "traffic-class 300",
            "lossless 3",
            "pfc",
            "trust dscp",
        ] {
            let refused = match parse(&words(bad)) {
                Err(e) => e.code == code::USAGE,
                Ok(n) => merged(&mlx5_default(), &n).check().is_err(),
            };
            assert!(refused, "{bad}");
        }
    }

    #[test]
    fn the_table_prints_as_nmcli_does() {
        let t = table("mlx5_1/1", &mlx5_default(), false);
        assert_eq!(
            t.render(Format::Terse),
            "mlx5_1/1:pcp:none:100,0,0,0,0,0,0,0/0,0,0,0,0,0,0,0:none:0:none:no\n"
        );
    }
}
