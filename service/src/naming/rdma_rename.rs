//! The names rdma-core's `rdma_rename` (kernel-boot/rdma_rename.c, run by udev for every
//! RDMA device that is added) gives a device under each policy, computed from what it reads:
//! RDMA netlink (index, protocol, node GUID, name assign type) and sysfs (the parent's
//! `acpi_index`/`index`, subsystem, `sfnum`, PCI address, `ari_enabled`, `config`, `physfn`
//! and the PF's `virtfn<N>` links). Pure: the readers in `kernel::sysfs` collect the inputs.
//!
//! Behaviour reproduced, including where it surprises (see each function):
//! - NAME_FALLBACK is onboard, then PCI. The GUID is not part of it, whatever the comment in
//!   the shipped rules file says (`str2policy`: `NAME_ONBOARD | NAME_PCI`).
//! - The prefix is RDMA netlink's protocol word as sent (`ib`, `roce`, `iw`, `opa`, also
//!   `usnic`), `rdma` only when the kernel sends none.
//! - A device whose name the user gave (NAME_ASSIGN_TYPE user: rxe, siw; Linux 6.11 and later
//!   report it) is left alone. On older kernels rdma_rename cannot tell, and NAME_GUID or
//!   NAME_FIXED rename soft devices too.
//! - PCI names never use the slot number (`find_sun` scans "%s.%s", which cannot match, so
//!   it always finds none): always `p<bus>s<slot>`.
//! - `f<function>` (and a VF's `v<n>`, which is only written inside it) appears only when the
//!   function is not 0 or the PF's config space has the multi-function bit: a VF of a
//!   single-function PF gets its PF's name.

use serde::Serialize;

use crate::model::guid::Guid;
use rdma_manager_dbus::text::quote_capped;

/// RDMA_NAME_ASSIGN_TYPE_USER: the name was given by user space (rxe, siw, SMI sub devices).
pub const NAME_ASSIGN_TYPE_USER: u8 = 1;
/// ONBOARD_INDEX_MAX: the largest onboard index rdma_rename (like systemd) accepts.
pub const ONBOARD_INDEX_MAX: u32 = 16 * 1024 - 1;

/// A naming policy, the second argument of `rdma_rename`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub enum NamingPolicy {
    /// Keep the kernel's name.
    Kernel,
    /// From the PCI location (`ibp59s0f0`).
    Pci,
    /// From the node GUID (`ibxb8599f0300d4e62a`).
    Guid,
    /// From the firmware's onboard index (`ibo1`).
    Onboard,
    /// Onboard, else PCI, else keep the kernel's name (rdma-core's default).
    Fallback,
    /// A fixed name (the third argument).
    Fixed(String),
}

impl NamingPolicy {
    /// The policies a whole host can use (NAME_FIXED names one device).
    pub const HOST_POLICIES: [NamingPolicy; 5] = [
        NamingPolicy::Kernel,
        NamingPolicy::Onboard,
        NamingPolicy::Pci,
        NamingPolicy::Guid,
        NamingPolicy::Fallback,
    ];

    /// rdma-core's default policy.
    pub const DEFAULT: NamingPolicy = NamingPolicy::Fallback;

    /// `str2policy`: exact, upper-case keywords.
    pub fn parse(keyword: &str, fixed_name: Option<&str>) -> Option<NamingPolicy> {
        Some(match keyword {
            "NAME_KERNEL" => NamingPolicy::Kernel,
            "NAME_PCI" => NamingPolicy::Pci,
            "NAME_GUID" => NamingPolicy::Guid,
            "NAME_ONBOARD" => NamingPolicy::Onboard,
            "NAME_FALLBACK" => NamingPolicy::Fallback,
            "NAME_FIXED" => NamingPolicy::Fixed(fixed_name?.to_string()),
            _ => return None,
        })
    }

    pub fn keyword(&self) -> &'static str {
        match self {
            NamingPolicy::Kernel => "NAME_KERNEL",
            NamingPolicy::Pci => "NAME_PCI",
            NamingPolicy::Guid => "NAME_GUID",
            NamingPolicy::Onboard => "NAME_ONBOARD",
            NamingPolicy::Fallback => "NAME_FALLBACK",
            NamingPolicy::Fixed(_) => "NAME_FIXED",
        }
    }

    fn tries_onboard(&self) -> bool {
        matches!(self, NamingPolicy::Onboard | NamingPolicy::Fallback)
    }

    fn tries_pci(&self) -> bool {
        matches!(self, NamingPolicy::Pci | NamingPolicy::Fallback)
    }
}

/// What RDMA netlink's GET dump says about the device (`get_nldata_cb` needs the index, the
/// name and the node GUID; protocol and name assign type are optional).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NetlinkIdentity {
    pub index: u32,
    pub node_guid: Guid,
    pub protocol: Option<String>,
    /// RDMA_NLDEV_ATTR_NAME_ASSIGN_TYPE (Linux 6.11 and later).
    pub name_assign_type: Option<u8>,
}

/// A PCI function as `fill_pci_info` reads it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PciFunction {
    /// The last component of the function's link target (`0000:3b:00.0`).
    pub address: String,
    /// `ari_enabled` as read; `None` when it cannot be opened.
    pub ari_enabled: Option<String>,
    /// Byte 0x0e of `config` (the header type), when its first 64 bytes could be read.
    pub header_type: Option<u8>,
}

/// The physical function of an SR-IOV VF: its `physfn` link.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PhysFn {
    pub function: PciFunction,
    /// The PF's `virtfn<N>` entries in the order they are looked at (by N), with what each
    /// points at (`None` when the link cannot be read).
    pub virtfns: Vec<(String, Option<PciFunction>)>,
}

/// The PCI function a name is built from.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PciParent {
    pub function: PciFunction,
    /// Present when the function is an SR-IOV VF.
    pub physfn: Option<PhysFn>,
}

/// What rdma_rename reads under `/sys/class/infiniband/<dev>/device`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RenameSysfs {
    /// The `device` link exists (hardware and SFs; not rxe or siw).
    pub has_parent: bool,
    /// The last component of `device/subsystem` (`pci`, `auxiliary`, ...).
    pub subsystem: Option<String>,
    /// `device/acpi_index` (ACPI _DSM) as read; `None` when it cannot be opened.
    pub acpi_index: Option<String>,
    /// `device/index` (SMBIOS type 41) as read; `None` when it cannot be opened.
    pub smbios_index: Option<String>,
    /// `device/sfnum` of an auxiliary parent (a sub-function).
    pub sfnum: Option<String>,
    /// The PCI function: the parent itself, or for an SF the PCI function above it.
    pub pci: Option<PciParent>,
}

/// Everything rdma_rename looks at for one device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RenameInputs {
    /// The device's name when rdma_rename runs (`%k`).
    pub name: String,
    /// `None` when the netlink dump lacks it (or its node GUID).
    pub netlink: Option<NetlinkIdentity>,
    pub sysfs: RenameSysfs,
}

/// Why a policy gives a device no name (rdma_rename exits 1 and the kernel's name stays).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
pub enum NoName {
    #[error("NAME_KERNEL keeps the name the kernel gives the device")]
    KernelPolicy,
    #[error("its name was given by the user (the kernel reports NAME_ASSIGN_TYPE user, as for rxe and siw); rdma_rename leaves it alone")]
    UserNamed,
    #[error("RDMA netlink does not list it with an index, a name and a node GUID")]
    NotInNetlink,
    #[error("no onboard index ({onboard}) and no PCI name ({pci})")]
    Fallback {
        onboard: Box<NoName>,
        pci: Box<NoName>,
    },
    #[error("its parent has neither acpi_index nor index: not an onboard device")]
    NotOnboard,
    #[error("{file} is empty")]
    OnboardEmpty { file: &'static str },
    #[error("{file} {value_q} is not a number", value_q = quote_capped(.value))]
    OnboardNotNumber { file: &'static str, value: String },
    #[error("{file} {value} is above {ONBOARD_INDEX_MAX}")]
    OnboardTooLarge { file: &'static str, value: u32 },
    #[error("it has no parent device (a virtual device such as rxe or siw)")]
    NoParent,
    #[error("its parent is {}, not a PCI function", .bus.as_deref().map(|b| format!("on the {b} bus")).unwrap_or_else(|| "on no bus rdma_rename can read".into()))]
    NotPci { bus: Option<String> },
    #[error("its parent is an auxiliary device without sfnum")]
    SfWithoutSfnum,
    #[error("its PCI address {q0} is not domain:bus:slot.function", q0 = quote_capped(.0))]
    BadPciAddress(String),
    #[error("a virtfn link of its physical function cannot be read")]
    VirtfnUnreadable,
    #[error("its node GUID is zero (virtual devices start without one)")]
    ZeroGuid,
}

/// Reads an unsigned number as C's `%u` does: blanks, an optional sign, digits; a minus sign
/// wraps. `None` for no digits, `Some(Err(()))` for a file with nothing but blanks (EOF).
fn scan_u32(raw: &str) -> Result<Option<u32>, ()> {
    let s = raw.trim_start();
    if s.is_empty() {
        return Err(());
    }
    let (neg, rest) = match s.as_bytes()[0] {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    if digits.is_empty() {
        return Ok(None);
    }
    // strtoul saturates at ULONG_MAX, which an unsigned int truncates to all ones.
    let v = digits.parse::<u64>().map(|v| v as u32).unwrap_or(u32::MAX);
    Ok(Some(if neg { v.wrapping_neg() } else { v }))
}

/// `"%d"` then `== 1`, as `is_pci_ari_enabled`.
fn ari_enabled(f: &PciFunction) -> bool {
    let Some(raw) = f.ari_enabled.as_deref() else {
        return false;
    };
    let s = raw.trim_start();
    let s = s.strip_prefix('+').unwrap_or(s);
    let digits: String = s.chars().take_while(char::is_ascii_digit).collect();
    digits.parse::<u64>() == Ok(1)
}

/// Domain, bus, slot and function, as `fill_pci_info` reads them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Bdf {
    domain: u32,
    bus: u32,
    slot: u32,
    func: u32,
}

/// `sscanf(pci, "%x:%x:%x.%u")` on the link's last component, then the ARI rule: with ARI
/// the 5-bit slot and 3-bit function are one 8-bit function number.
fn fill_pci_info(f: &PciFunction) -> Result<Bdf, NoName> {
    let bad = || NoName::BadPciAddress(f.address.clone());
    let hex = |s: &str| -> Option<(u32, usize)> {
        let len = s.bytes().take_while(u8::is_ascii_hexdigit).count();
        let v = u32::from_str_radix(s.get(..len)?, 16).ok()?;
        Some((v, len))
    };
    let s = f.address.as_str();
    let (domain, n) = hex(s).ok_or_else(bad)?;
    let s = s[n..].strip_prefix(':').ok_or_else(bad)?;
    let (bus, n) = hex(s).ok_or_else(bad)?;
    let s = s[n..].strip_prefix(':').ok_or_else(bad)?;
    let (slot, n) = hex(s).ok_or_else(bad)?;
    let s = s[n..].strip_prefix('.').ok_or_else(bad)?;
    let func = match scan_u32(s) {
        Ok(Some(v)) => v,
        _ => return Err(bad()),
    };
    let mut b = Bdf {
        domain,
        bus,
        slot,
        func,
    };
    if ari_enabled(f) {
        b.func += b.slot * 8;
    }
    Ok(b)
}

/// The name prefix: RDMA netlink's protocol word, else `rdma`.
pub fn prefix(protocol: Option<&str>) -> &str {
    protocol.unwrap_or("rdma")
}

/// `by_onboard`: `<prefix>o<index>` from `acpi_index`, or `index` when `acpi_index` cannot
/// be opened (a present but unreadable `acpi_index` does not fall back).
pub fn by_onboard(prefix: &str, s: &RenameSysfs) -> Result<String, NoName> {
    let (file, raw) = match (&s.acpi_index, &s.smbios_index) {
        (Some(a), _) => ("acpi_index", a),
        (None, Some(i)) => ("index", i),
        (None, None) => return Err(NoName::NotOnboard),
    };
    match scan_u32(raw) {
        // fscanf returns EOF here and rdma_rename then prints an uninitialised index; no
        // sane name comes out of it.
        Err(()) => Err(NoName::OnboardEmpty { file }),
        Ok(None) => Err(NoName::OnboardNotNumber {
            file,
            value: raw.trim_end().to_string(),
        }),
        Ok(Some(v)) if v > ONBOARD_INDEX_MAX => Err(NoName::OnboardTooLarge { file, value: v }),
        Ok(Some(v)) => Ok(format!("{prefix}o{v}")),
    }
}

/// `by_pci`: `<prefix>[P<domain>]p<bus>s<slot>[f<function>[v<vf>]][S<sfnum>]`, numbers in
/// decimal.
pub fn by_pci(prefix: &str, s: &RenameSysfs) -> Result<String, NoName> {
    let mut sfnum = None;
    match s.subsystem.as_deref() {
        Some("pci") => {}
        Some("auxiliary") => {
            // detect_sf: an auxiliary parent is named after the PCI function above it.
            let n = s
                .sfnum
                .as_deref()
                .and_then(|raw| scan_u32(raw).ok().flatten())
                .ok_or(NoName::SfWithoutSfnum)?;
            sfnum = Some(n);
        }
        None if !s.has_parent => return Err(NoName::NoParent),
        other => {
            return Err(NoName::NotPci {
                bus: other.map(str::to_string),
            })
        }
    }
    let parent = s.pci.as_ref().ok_or(NoName::NotPci { bus: None })?;
    // get_virtfn_info: a VF is named after its PF, with the number of the PF's virtfn<N>
    // link whose slot and function match (the bus is not compared).
    let mut vf = None;
    let named = match &parent.physfn {
        Some(pf) => {
            let me = fill_pci_info(&parent.function)?;
            let mut number = 0;
            for (entry, target) in &pf.virtfns {
                let Some(digits) = entry.strip_prefix("virtfn").filter(|d| !d.is_empty()) else {
                    continue;
                };
                let target = target.as_ref().ok_or(NoName::VirtfnUnreadable)?;
                let other = fill_pci_info(target).map_err(|_| NoName::VirtfnUnreadable)?;
                if other.func == me.func && other.slot == me.slot {
                    // atoi
                    number = scan_u32(digits).ok().flatten().unwrap_or(0);
                    break;
                }
            }
            vf = Some(number);
            &pf.function
        }
        None => &parent.function,
    };
    let b = fill_pci_info(named)?;
    let mut name = prefix.to_string();
    if b.domain > 0 {
        name.push_str(&format!("P{}", b.domain));
    }
    name.push_str(&format!("p{}s{}", b.bus, b.slot));
    let multifunction = named.header_type.is_some_and(|h| h & 0x80 != 0);
    if b.func > 0 || multifunction {
        name.push_str(&format!("f{}", b.func));
        if let Some(v) = vf {
            name.push_str(&format!("v{v}"));
        }
    }
    if let Some(n) = sfnum {
        name.push_str(&format!("S{n}"));
    }
    Ok(name)
}

/// `by_guid`: `<prefix>x` and the node GUID in 16 hex digits. rdma_rename prints the four
/// 16-bit words of the host-order u64 from the highest; on little-endian hosts (x86_64,
/// aarch64, ppc64le) that is the GUID as written, which is what this gives.
pub fn by_guid(prefix: &str, guid: Guid) -> Result<String, NoName> {
    if guid.0 == 0 {
        return Err(NoName::ZeroGuid);
    }
    Ok(format!("{prefix}x{:016x}", guid.0))
}

/// The name rdma_rename gives the device under `policy`, or why it gives none.
pub fn rdma_rename(policy: &NamingPolicy, dev: &RenameInputs) -> Result<String, NoName> {
    if *policy == NamingPolicy::Kernel {
        return Err(NoName::KernelPolicy);
    }
    let nl = dev.netlink.as_ref().ok_or(NoName::NotInNetlink)?;
    if nl.name_assign_type == Some(NAME_ASSIGN_TYPE_USER) {
        return Err(NoName::UserNamed);
    }
    let prefix = prefix(nl.protocol.as_deref());
    match policy {
        NamingPolicy::Kernel => Err(NoName::KernelPolicy),
        NamingPolicy::Fixed(name) => Ok(name.clone()),
        NamingPolicy::Guid => by_guid(prefix, nl.node_guid),
        p => {
            let onboard = if p.tries_onboard() {
                match by_onboard(prefix, &dev.sysfs) {
                    Ok(n) => return Ok(n),
                    Err(e) => Some(e),
                }
            } else {
                None
            };
            let pci = p.tries_pci().then(|| by_pci(prefix, &dev.sysfs));
            match (onboard, pci) {
                (_, Some(Ok(n))) => Ok(n),
                (Some(o), Some(Err(e))) => Err(NoName::Fallback {
                    onboard: Box::new(o),
                    pci: Box::new(e),
                }),
                (Some(o), None) => Err(o),
                (None, Some(Err(e))) => Err(e),
                (None, None) => Err(NoName::KernelPolicy),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn func(address: &str, header_type: u8) -> PciFunction {
        PciFunction {
            address: address.into(),
            ari_enabled: Some("0\n".into()),
            header_type: Some(header_type),
        }
    }

    fn pci_dev(protocol: &str, guid: u64, parent: PciParent) -> RenameInputs {
        RenameInputs {
            name: "mlx5_0".into(),
            netlink: Some(NetlinkIdentity {
                index: 0,
                node_guid: Guid(guid),
                protocol: Some(protocol.into()),
                name_assign_type: Some(0),
            }),
            sysfs: RenameSysfs {
                has_parent: true,
                subsystem: Some("pci".into()),
                acpi_index: None,
                smbios_index: None,
                sfnum: None,
                pci: Some(parent),
            },
        }
    }

    fn plain(address: &str, header_type: u8) -> PciParent {
        PciParent {
            function: func(address, header_type),
            physfn: None,
        }
    }

    #[test]
    fn policy_keywords() {
        for p in NamingPolicy::HOST_POLICIES {
            assert_eq!(NamingPolicy::parse(p.keyword(), None), Some(p.clone()));
        }
        assert_eq!(
            NamingPolicy::parse("NAME_FIXED", Some("myib")),
            Some(NamingPolicy::Fixed("myib".into()))
        );
        // rdma_rename refuses NAME_FIXED without a name, and lower-case keywords.
        assert_eq!(NamingPolicy::parse("NAME_FIXED", None), None);
        assert_eq!(NamingPolicy::parse("name_pci", None), None);
        assert_eq!(NamingPolicy::DEFAULT.keyword(), "NAME_FALLBACK");
    }

    /// The examples in rdma_rename.c's header comment.
    #[test]
    fn rdma_cores_own_examples() {
        // NAME_PCI: pci = 0000:00:0c.4, IB: mlx5_0 -> ibp0s12f4.
        let d = pci_dev("ib", 1, plain("0000:00:0c.4", 0x00));
        assert_eq!(
            rdma_rename(&NamingPolicy::Pci, &d).as_deref(),
            Ok("ibp0s12f4")
        );
        // NAME_GUID: 5254:00c0:fe12:3455, RoCE: mlx5_0 -> rocex525400c0fe123455.
        let d = pci_dev("roce", 0x5254_00c0_fe12_3455, plain("0000:00:0c.4", 0));
        assert_eq!(
            rdma_rename(&NamingPolicy::Guid, &d).as_deref(),
            Ok("rocex525400c0fe123455")
        );
        // NAME_ONBOARD: index 3, OPA: hfi1_1 -> opao3.
        let mut d = pci_dev("opa", 1, plain("0000:81:00.0", 0));
        d.sysfs.acpi_index = Some("3\n".into());
        assert_eq!(
            rdma_rename(&NamingPolicy::Onboard, &d).as_deref(),
            Ok("opao3")
        );
        // SF: parent 0000:c1:00.0, sfnum 88, RoCE: mlx5_5 -> rocep193s0f0S88.
        let mut d = pci_dev("roce", 1, plain("0000:c1:00.0", 0x80));
        d.sysfs.subsystem = Some("auxiliary".into());
        d.sysfs.sfnum = Some("88\n".into());
        assert_eq!(
            rdma_rename(&NamingPolicy::Pci, &d).as_deref(),
            Ok("rocep193s0f0S88")
        );
        // VF-SF: parent 0000:c1:00.4 (VF 0 of 0000:c1:00.0), sfnum 99: rocep193s0f0v0S99.
        let mut d = pci_dev(
            "roce",
            1,
            PciParent {
                function: func("0000:c1:00.4", 0x00),
                physfn: Some(PhysFn {
                    function: func("0000:c1:00.0", 0x80),
                    virtfns: vec![
                        ("virtfn0".into(), Some(func("0000:c1:00.4", 0))),
                        ("virtfn1".into(), Some(func("0000:c1:00.5", 0))),
                    ],
                }),
            },
        );
        d.sysfs.subsystem = Some("auxiliary".into());
        d.sysfs.sfnum = Some("99\n".into());
        assert_eq!(
            rdma_rename(&NamingPolicy::Pci, &d).as_deref(),
            Ok("rocep193s0f0v0S99")
        );
    }

    #[test]
    fn pci_names() {
        let pci = |p: PciParent| by_pci("ib", &pci_dev("ib", 1, p).sysfs);
        // A ConnectX-6 port on bus 0x3b, function 0 of a two-function card: f0 is written.
        assert_eq!(pci(plain("0000:3b:00.0", 0x80)).as_deref(), Ok("ibp59s0f0"));
        // Function 0 of a single-function card: no f.
        assert_eq!(pci(plain("0000:3b:00.0", 0x00)).as_deref(), Ok("ibp59s0"));
        // config unreadable or short: not multi-function.
        let mut f = plain("0000:3b:00.0", 0);
        f.function.header_type = None;
        assert_eq!(pci(f).as_deref(), Ok("ibp59s0"));
        // A domain above 0 is written in decimal after P.
        assert_eq!(
            pci(plain("10000:01:00.1", 0)).as_deref(),
            Ok("ibP65536p1s0f1")
        );
        // ARI: the slot's five bits join the function number.
        let mut ari = plain("0000:af:01.2", 0);
        ari.function.ari_enabled = Some("1\n".into());
        assert_eq!(pci(ari).as_deref(), Ok("ibp175s1f10"));
        assert_eq!(
            pci(plain("garbage", 0)),
            Err(NoName::BadPciAddress("garbage".into()))
        );
    }

    #[test]
    fn virtual_functions() {
        let vf = |pf_header: u8, vf_addr: &str, virtfns: Vec<(&str, &str)>| PciParent {
            function: func(vf_addr, 0),
            physfn: Some(PhysFn {
                function: func("0000:3b:00.0", pf_header),
                virtfns: virtfns
                    .into_iter()
                    .map(|(e, a)| (e.to_string(), Some(func(a, 0))))
                    .collect(),
            }),
        };
        let name = |p| by_pci("ib", &pci_dev("ib", 1, p).sysfs);
        let two = vec![("virtfn0", "0000:3b:00.2"), ("virtfn1", "0000:3b:00.3")];
        assert_eq!(
            name(vf(0x80, "0000:3b:00.3", two.clone())).as_deref(),
            Ok("ibp59s0f0v1")
        );
        // The PF is single-function: neither f nor v is written and the VF gets the PF's name.
        assert_eq!(
            name(vf(0x00, "0000:3b:00.3", two.clone())).as_deref(),
            Ok("ibp59s0")
        );
        // No virtfn link matches: v0.
        assert_eq!(
            name(vf(0x80, "0000:3b:00.7", two)).as_deref(),
            Ok("ibp59s0f0v0")
        );
        // VFs past the first bus: only slot and function are compared, so virtfn8 on bus 0x3c
        // (slot 0, function 2) is taken for virtfn0's VF on bus 0x3b when listed first.
        let across = vec![("virtfn8", "0000:3c:00.2"), ("virtfn0", "0000:3b:00.2")];
        assert_eq!(
            name(vf(0x80, "0000:3b:00.2", across)).as_deref(),
            Ok("ibp59s0f0v8")
        );
        // An unreadable virtfn link spoils the whole PCI name.
        let mut broken = vf(0x80, "0000:3b:00.2", vec![]);
        if let Some(pf) = broken.physfn.as_mut() {
            pf.virtfns.push(("virtfn0".into(), None));
        }
        assert_eq!(name(broken), Err(NoName::VirtfnUnreadable));
    }

    #[test]
    fn onboard_index() {
        let mut s = RenameSysfs::default();
        assert_eq!(by_onboard("ib", &s), Err(NoName::NotOnboard));
        s.smbios_index = Some("2\n".into());
        assert_eq!(by_onboard("ib", &s).as_deref(), Ok("ibo2"));
        // acpi_index comes first, and one that cannot be parsed does not fall back to index.
        s.acpi_index = Some("7\n".into());
        assert_eq!(by_onboard("ib", &s).as_deref(), Ok("ibo7"));
        s.acpi_index = Some("x\n".into());
        assert!(matches!(
            by_onboard("ib", &s),
            Err(NoName::OnboardNotNumber {
                file: "acpi_index",
                ..
            })
        ));
        s.acpi_index = Some("\n".into());
        assert_eq!(
            by_onboard("ib", &s),
            Err(NoName::OnboardEmpty { file: "acpi_index" })
        );
        // 0 is accepted (systemd refuses it; rdma_rename does not), 16383 is the largest.
        s.acpi_index = Some("0\n".into());
        assert_eq!(by_onboard("ib", &s).as_deref(), Ok("ibo0"));
        s.acpi_index = Some("16383".into());
        assert_eq!(by_onboard("ib", &s).as_deref(), Ok("ibo16383"));
        s.acpi_index = Some("16384".into());
        assert_eq!(
            by_onboard("ib", &s),
            Err(NoName::OnboardTooLarge {
                file: "acpi_index",
                value: 16384
            })
        );
        // %u wraps a minus sign: far too large.
        s.acpi_index = Some("-1".into());
        assert!(matches!(
            by_onboard("ib", &s),
            Err(NoName::OnboardTooLarge {
                value: u32::MAX,
                ..
            })
        ));
    }

    #[test]
    fn fallback_is_onboard_then_pci_never_guid() {
        let mut d = pci_dev("ib", 0xb859_9f03_00d4_e62a, plain("0000:3b:00.0", 0x80));
        assert_eq!(
            rdma_rename(&NamingPolicy::Fallback, &d).as_deref(),
            Ok("ibp59s0f0")
        );
        d.sysfs.acpi_index = Some("1\n".into());
        assert_eq!(
            rdma_rename(&NamingPolicy::Fallback, &d).as_deref(),
            Ok("ibo1")
        );
        // Neither onboard nor PCI: the kernel's name stays, even though a GUID exists.
        let mut virt = d.clone();
        virt.sysfs = RenameSysfs::default();
        let e = rdma_rename(&NamingPolicy::Fallback, &virt).unwrap_err();
        assert_eq!(
            e,
            NoName::Fallback {
                onboard: Box::new(NoName::NotOnboard),
                pci: Box::new(NoName::NoParent)
            }
        );
        assert!(e.to_string().contains("no parent device"));
        assert_eq!(
            rdma_rename(&NamingPolicy::Guid, &virt).as_deref(),
            Ok("ibxb8599f0300d4e62a")
        );
    }

    #[test]
    fn user_named_and_kernel_and_fixed() {
        let mut rxe = pci_dev("roce", 0x5054_00ff_fe12_3456, PciParent::default());
        rxe.name = "rxe0".into();
        rxe.sysfs = RenameSysfs::default();
        if let Some(nl) = rxe.netlink.as_mut() {
            nl.name_assign_type = Some(NAME_ASSIGN_TYPE_USER);
        }
        for p in [
            NamingPolicy::Guid,
            NamingPolicy::Fixed("x".into()),
            NamingPolicy::Pci,
        ] {
            assert_eq!(rdma_rename(&p, &rxe), Err(NoName::UserNamed), "{p:?}");
        }
        // A kernel before 6.11 does not say: NAME_GUID renames the rxe device.
        if let Some(nl) = rxe.netlink.as_mut() {
            nl.name_assign_type = None;
        }
        assert_eq!(
            rdma_rename(&NamingPolicy::Guid, &rxe).as_deref(),
            Ok("rocex505400fffe123456")
        );
        assert_eq!(
            rdma_rename(&NamingPolicy::Kernel, &rxe),
            Err(NoName::KernelPolicy)
        );
        assert_eq!(
            rdma_rename(&NamingPolicy::Fixed("hpc0".into()), &rxe).as_deref(),
            Ok("hpc0")
        );
        // No protocol from netlink: the rdma prefix; a zero GUID: no GUID name.
        let mut d = pci_dev("ib", 0, plain("0000:3b:00.0", 0));
        if let Some(nl) = d.netlink.as_mut() {
            nl.protocol = None;
        }
        assert_eq!(
            rdma_rename(&NamingPolicy::Pci, &d).as_deref(),
            Ok("rdmap59s0")
        );
        assert_eq!(rdma_rename(&NamingPolicy::Guid, &d), Err(NoName::ZeroGuid));
        d.netlink = None;
        assert_eq!(
            rdma_rename(&NamingPolicy::Pci, &d),
            Err(NoName::NotInNetlink)
        );
    }

    #[test]
    fn parents_that_are_not_pci() {
        let mut s = RenameSysfs {
            has_parent: true,
            subsystem: Some("platform".into()),
            ..RenameSysfs::default()
        };
        let e = by_pci("ib", &s).unwrap_err();
        assert_eq!(
            e.to_string(),
            "its parent is on the platform bus, not a PCI function"
        );
        s.subsystem = Some("auxiliary".into());
        s.pci = Some(plain("0000:c1:00.0", 0));
        assert_eq!(by_pci("ib", &s), Err(NoName::SfWithoutSfnum));
        s.subsystem = None;
        assert_eq!(by_pci("ib", &s), Err(NoName::NotPci { bus: None }));
    }
}
