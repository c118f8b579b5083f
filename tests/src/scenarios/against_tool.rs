//! A request the service sends, compared byte for byte with what iproute2's tool sends for the
//! same request, both seen on an nlmon device (real kernel only); and the kernel's answer to
//! each, which must be the same.

use std::future::Future;
use std::process::Command;

use rdma_managerd::kernel::HostError;
use rdma_managerd::model::{Errno, Guid};

use super::format::outcome;
use super::Run;
use crate::nlmon::{self, Capture, Message};

/// The nlmon device the real run listens on.
const NLMON: &str = "nlmon0";

/// One comparison: the tool's command line, and which of the captured requests count (a
/// tool may first look up an interface index or a generic netlink family; so may the
/// service, and those are not the request compared).
pub struct ToolRequest<'a> {
    pub label: &'a str,
    pub tool: &'a [&'a str],
    pub protocol: u16,
    pub counts: fn(&Message) -> bool,
    /// Where the requests' attributes start, when their padding is to be ignored (see
    /// [`nlmon::zero_attr_padding`]); `None` compares every byte.
    pub attrs_at: Option<usize>,
}

impl Run {
    /// Starts the capture on the real kernel (once); None on the simulated host.
    pub(super) fn capture(&mut self) -> Option<&Capture> {
        self.reference.as_ref()?;
        if self.capture.is_none() {
            match Capture::start(NLMON) {
                Ok(c) => self.capture = Some(c),
                Err(e) => {
                    self.failures.push(format!("nlmon capture: {e}"));
                    return None;
                }
            }
        }
        self.capture.as_ref()
    }

    /// Runs `ours`, records its outcome, and on the real kernel compares its requests with
    /// the tool's and the kernel's answers to both.
    pub(super) async fn against_tool<T>(
        &mut self,
        req: ToolRequest<'_>,
        ours: impl Future<Output = Result<T, HostError>>,
    ) -> Result<T, HostError> {
        let tool_side = match self.capture() {
            Some(cap) => {
                cap.drain();
                let status = match Command::new(req.tool[0]).args(&req.tool[1..]).output() {
                    Ok(o) => format!(
                        "exit {:?}: {}",
                        o.status.code(),
                        String::from_utf8_lossy(&o.stderr).trim()
                    ),
                    Err(e) => e.to_string(),
                };
                Some((status, cap.drain()))
            }
            None => None,
        };
        let r = ours.await;
        self.line(format!("{}: {}", req.label, outcome(&r, |_| String::new())));
        let Some((status, tool_msgs)) = tool_side else {
            return r;
        };
        let our_msgs = self
            .capture
            .as_ref()
            .map(Capture::drain)
            .unwrap_or_default();
        let pick = |msgs: &[Message]| -> Vec<Vec<u8>> {
            nlmon::requests(msgs, req.protocol)
                .into_iter()
                .zip(
                    msgs.iter()
                        .filter(|m| m.protocol == req.protocol && m.is_request()),
                )
                .filter(|(_, m)| (req.counts)(m))
                .map(|(b, _)| match req.attrs_at {
                    Some(at) => nlmon::zero_attr_padding(&b, at),
                    None => b,
                })
                .collect()
        };
        let (theirs, mine) = (pick(&tool_msgs), pick(&our_msgs));
        self.reference_checks += 1;
        if theirs.is_empty() {
            self.failures.push(format!(
                "{}: `{}` sent no request to compare with ({status}; {} messages seen)",
                req.label,
                req.tool.join(" "),
                tool_msgs.len()
            ));
        } else if theirs != mine {
            let show = |v: &[Vec<u8>]| v.iter().map(|b| nlmon::hex(b)).collect::<Vec<_>>();
            self.failures.push(format!(
                "{}: requests differ from `{}`:\n  tool: {:?}\n  ours: {:?}",
                req.label,
                req.tool.join(" "),
                show(&theirs),
                show(&mine)
            ));
        }
        // The kernel's answer to the tool's last counted request and the errno the service
        // reports must agree.
        let theirs_errno = tool_msgs.iter().rev().find_map(Message::error);
        // A refusal the service reports as Unsupported names the kernel's errno in its why.
        let agree = match (&r, theirs_errno) {
            (Ok(_), Some(0)) => true,
            (Err(e), Some(n)) if n != 0 => {
                e.errno() == Some(Errno(n))
                    || matches!(e, HostError::Unsupported { why, .. } if why.contains(&Errno(n).name()))
            }
            _ => false,
        };
        if !agree {
            self.failures.push(format!(
                "{}: the kernel answered `{}` with errno {theirs_errno:?}, the service reports {}",
                req.label,
                req.tool.join(" "),
                outcome(&r, |_| String::new())
            ));
        }
        r
    }
}

/// The kinds of rtnetlink message compared.
const RTM_NEWLINK: u16 = 16;
const RTM_GETDCB: u16 = 78;
/// The generic netlink controller (family lookups) and ethtool's PAUSE_GET command.
const GENL_ID_CTRL: u16 = 16;
const ETHTOOL_MSG_PAUSE_GET: u8 = 21;
/// Where a generic netlink message's command is: after the 16-byte nlmsghdr.
const GENL_CMD_AT: usize = 16;
/// nlmsghdr (16 bytes) and ifinfomsg (16 bytes): an RTM_NEWLINK without attributes.
const IFINFO_REQUEST_LEN: usize = 32;

impl Run {
    /// Adapter settings over netlink on a netdev that has none (veth: no DCB, no SR-IOV, no
    /// link-level pause):
    /// the request the service sends and iproute2's for the same setting, and the kernel's
    /// refusal of both.
    pub(super) async fn adapter_requests(&mut self) {
        let host = self.host.clone();
        let _ = self
            .against_tool(
                ToolRequest {
                    label: "dcb ieee read veth0",
                    tool: &["dcb", "pfc", "show", "dev", super::NETDEV_A],
                    protocol: 0,
                    counts: |m| m.kind() == RTM_GETDCB,
                    attrs_at: None,
                },
                host.dcb_read(super::NETDEV_A),
            )
            .await;
        let _ = self
            .against_tool(
                ToolRequest {
                    label: "ethtool pause read veth0",
                    tool: &[
                        "ethtool",
                        "--include-statistics",
                        "--show-pause",
                        super::NETDEV_A,
                    ],
                    protocol: libc::NETLINK_GENERIC as u16,
                    // Both first look the family up (and ethtool its policy); the request
                    // compared is the PAUSE_GET to the family.
                    counts: |m| {
                        m.kind() != GENL_ID_CTRL
                            && m.bytes.get(GENL_CMD_AT) == Some(&ETHTOOL_MSG_PAUSE_GET)
                    },
                    // ethtool leaves the device name's padding unwritten.
                    attrs_at: Some(GENL_CMD_AT + 4),
                },
                host.pause_stats(super::NETDEV_A),
            )
            .await;
        let _ = self
            .against_tool(
                ToolRequest {
                    label: "set vf 0 guids veth0",
                    tool: &[
                        "ip",
                        "link",
                        "set",
                        super::NETDEV_A,
                        "vf",
                        "0",
                        "node_guid",
                        "00:11:22:33:44:55:66:77",
                        "port_guid",
                        "00:11:22:33:44:55:66:78",
                    ],
                    protocol: 0,
                    // iproute2 first sends an empty RTM_NEWLINK (ifinfomsg alone) to learn
                    // whether the kernel has RTM_NEWLINK at all (`iplink_have_newlink`); the
                    // request compared is the one that names the interface.
                    counts: |m| m.kind() == RTM_NEWLINK && m.bytes.len() > IFINFO_REQUEST_LEN,
                    attrs_at: None,
                },
                host.set_vf_guids(
                    super::NETDEV_A,
                    0,
                    Guid(0x0011_2233_4455_6677),
                    Guid(0x0011_2233_4455_6678),
                ),
            )
            .await;
    }
}
