//! The transcript's text forms of what the document of docs/JSON.md does not hold: netlink
//! and sysfs readings, counters, outcomes of operations. Every value is written by hand here,
//! from the kernel's own numbers and words, never with `{:?}`: renaming or reshaping an
//! internal type must not change a transcript recorded on a real kernel (tests/lab/README.md,
//! "The transcript").

use std::fmt::Display;

use rdma_managerd::kernel::{HostError, NlDevice, NlPort, PortReading};
use rdma_managerd::model::{
    AttrError, CounterSnapshot, CounterSource, CounterWidth, Field, NetdevSnapshot, PhysState,
    PortState,
};

/// An absent netlink attribute, or a value not read.
pub const ABSENT: &str = "-";

/// `ok`, `ok VALUE`, or `err CODE` (the errno's name, or the host's own reason:
/// [`HostError::code`]).
pub fn outcome<T>(r: &Result<T, HostError>, value: impl FnOnce(&T) -> String) -> String {
    match r {
        Ok(v) => {
            let v = value(v);
            if v.is_empty() {
                "ok".to_string()
            } else {
                format!("ok {v}")
            }
        }
        Err(e) => format!("err {}", e.code()),
    }
}

/// The outcome of an operation that returns nothing.
pub fn done(r: &Result<(), HostError>) -> String {
    outcome(r, |()| String::new())
}

pub fn yes_no(b: bool) -> String {
    if b { "yes" } else { "no" }.to_string()
}

/// An optional value, [`ABSENT`] when there is none.
pub fn opt<T: Display>(v: Option<T>) -> String {
    v.map_or_else(|| ABSENT.to_string(), |v| v.to_string())
}

/// A sysfs attribute: its value, or `!missing`, `!ERRNO` (the read failed) or `!malformed`.
pub fn field<T>(f: &Field<T>, value: impl FnOnce(&T) -> String) -> String {
    match f {
        Ok(v) => value(v),
        Err(AttrError::Missing) => "!missing".to_string(),
        Err(AttrError::Unreadable(errno)) => format!("!{}", errno.name()),
        Err(AttrError::Malformed(_)) => "!malformed".to_string(),
    }
}

/// `[a, b, c]`, in the order given.
pub fn list<S: AsRef<str>>(items: impl IntoIterator<Item = S>) -> String {
    let items: Vec<String> = items.into_iter().map(|s| s.as_ref().to_string()).collect();
    format!("[{}]", items.join(", "))
}

/// A device of the RDMA netlink GET dump, as `rdma dev show` has it: node type and port count
/// as the kernel's numbers, GUIDs in the colon form.
pub fn nl_device(d: &NlDevice) -> String {
    format!(
        "nl dev {} {} node_type={} node_guid={} sys_image_guid={} fw={} protocol={} ports={}",
        d.index,
        d.name,
        opt(d.node_type),
        opt(d.node_guid.map(|g| g.colon_form())),
        opt(d.sys_image_guid.map(|g| g.colon_form())),
        opt(d.fw_version.as_deref()),
        opt(d.protocol.as_deref()),
        opt(d.port_count)
    )
}

/// A port of the RDMA netlink PORT_GET dump, as `rdma link show` has it: states as the
/// kernel's numbers (`enum ib_port_state`, `enum ib_port_phys_state`).
pub fn nl_port(p: &NlPort) -> String {
    format!(
        "nl port {}/{} state={} phys={} lid={} sm_lid={} lmc={} netdev={}",
        p.dev_name,
        p.port,
        opt(p.state),
        opt(p.phys_state),
        opt(p.lid),
        opt(p.sm_lid),
        opt(p.lmc),
        opt(p.netdev_name.as_deref())
    )
}

/// A network interface's sysfs attributes: `type` is the ARPHRD number, `operstate` the word.
pub fn netdev(n: &NetdevSnapshot) -> String {
    format!(
        "netdev {} ifindex={} type={} address={} mtu={} operstate={}",
        n.name,
        field(&n.ifindex, u32::to_string),
        field(&n.arphrd, u16::to_string),
        field(&n.address, |a| a.to_sysfs()),
        field(&n.mtu, u32::to_string),
        field(&n.operstate, String::clone)
    )
}

/// Where a port's byte counts come from: `pma32`, `pma64`, `hw_counters`, `netdev:NAME` or
/// `none`.
pub fn counter_source(s: &CounterSource) -> String {
    match s {
        CounterSource::Pma(CounterWidth::Bits32) => "pma32".to_string(),
        CounterSource::Pma(CounterWidth::Bits64) => "pma64".to_string(),
        CounterSource::HwCounters => "hw_counters".to_string(),
        CounterSource::Netdev(n) => format!("netdev:{n}"),
        CounterSource::None => "none".to_string(),
    }
}

/// A port's counters reduced to their shape: the values move with background traffic, so
/// only whether the byte counts were readable, the saturation flag and the `hw_counters`
/// names (sorted by name) are kept.
pub fn counters_shape(c: &CounterSnapshot) -> String {
    format!(
        "source={} tx_bytes={} rx_bytes={} saturated={} hw={}",
        counter_source(&c.source),
        readable(&c.tx_bytes),
        readable(&c.rx_bytes),
        yes_no(c.saturated),
        list(c.hw.iter().map(|(n, _)| n))
    )
}

fn readable<T>(f: &Field<T>) -> String {
    field(f, |_| "readable".to_string())
}

/// A port's state and physical state as sysfs words (`ACTIVE`, `LinkUp`): the document's
/// `State` and `PhysState` values.
pub fn port_state(state: &Field<PortState>, phys: &Field<PhysState>) -> String {
    format!(
        "state={} phys={}",
        field(state, |s| s.sysfs_name().to_string()),
        field(phys, |p| p.sysfs_name().to_string())
    )
}

/// One port's reading by the port poll: states as sysfs words, LIDs as numbers, [`ABSENT`]
/// when the poll did not read them.
pub fn poll_reading(r: &PortReading) -> String {
    let lid = |l: &Option<Field<u32>>| match l {
        Some(f) => field(f, u32::to_string),
        None => ABSENT.to_string(),
    };
    format!(
        "{} lid={} sm_lid={}",
        port_state(&r.state, &r.phys_state),
        lid(&r.lid),
        lid(&r.sm_lid)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use rdma_managerd::model::Errno;

    #[test]
    fn outcomes_name_the_errno_and_nothing_of_rust() {
        let ok: Result<(), HostError> = Ok(());
        assert_eq!(done(&ok), "ok");
        let refused: Result<(), HostError> = Err(HostError::kernel(
            rdma_managerd::kernel::Op::NlNewLink,
            Errno::EEXIST,
        ));
        assert_eq!(done(&refused), "err EEXIST");
        let tos: Result<u8, HostError> = Ok(32);
        assert_eq!(outcome(&tos, u8::to_string), "ok 32");
    }

    #[test]
    fn attributes_and_lists() {
        assert_eq!(opt(None::<u8>), "-");
        assert_eq!(opt(Some(4u8)), "4");
        assert_eq!(field(&Ok(3u32), u32::to_string), "3");
        assert_eq!(
            field(&Err::<u32, _>(AttrError::Missing), u32::to_string),
            "!missing"
        );
        assert_eq!(
            field(
                &Err::<u32, _>(AttrError::Unreadable(Errno::EINVAL)),
                u32::to_string
            ),
            "!EINVAL"
        );
        assert_eq!(list(["a", "b"]), "[a, b]");
        assert_eq!(list(Vec::<String>::new()), "[]");
        assert_eq!(
            counter_source(&CounterSource::Netdev("veth0".into())),
            "netdev:veth0"
        );
        assert_eq!(
            port_state(&Ok(PortState::Down), &Ok(PhysState::Polling)),
            "state=DOWN phys=Polling"
        );
    }
}
