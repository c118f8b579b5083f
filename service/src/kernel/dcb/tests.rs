//! The requests against what iproute2 6.1's `dcb` sent on this machine's kernel, captured
//! with `strace -f -e trace=sendto -e write=3 -xx dcb ...` (sequence number zeroed). The
//! sets of PFC, ETS and the trust table cannot be captured on a device without DCB (`dcb`
//! reads first and stops at EOPNOTSUPP; 6.1 has no `apptrust`): those are checked against
//! the layout of iproute2's `dcb_set_attribute_va` (dcb/dcb.c), the one the captured
//! `dcb app add` request follows.

use super::wire::*;

fn hex(s: &str) -> Vec<u8> {
    s.split_whitespace()
        .map(|b| u8::from_str_radix(b, 16).expect("hex byte"))
        .collect()
}

#[test]
fn get_equals_dcb_pfc_show() {
    // dcb pfc show dev qv0 (and ets/app show: the same IEEE_GET)
    let want = hex("1c 00 00 00 4e 00 05 00 00 00 00 00 00 00 00 00
                    00 15 00 00 08 00 01 00 71 76 30 00");
    assert_eq!(ieee_get_request("qv0"), want);
    // dcb pfc show dev lo: the name's padding
    let want = hex("1c 00 00 00 4e 00 05 00 00 00 00 00 00 00 00 00
                    00 15 00 00 07 00 01 00 6c 6f 00 00");
    assert_eq!(ieee_get_request("lo"), want);
}

#[test]
fn app_add_equals_dcb_app_add() {
    // dcb app add dev qv0 dscp-prio 26:3
    let want = hex("2c 00 00 00 4f 00 05 00 00 00 00 00 00 00 00 00
                    00 14 00 00 08 00 01 00 71 76 30 00 10 00 0d 80
                    0c 00 03 80 08 00 01 00 05 03 1a 00");
    assert_eq!(ieee_add_apps_request("qv0", &[DcbApp::dscp(26, 3)]), want);
    // dcb app add dev qv0 dscp-prio 26:3 48:6
    let want = hex("34 00 00 00 4f 00 05 00 00 00 00 00 00 00 00 00
                    00 14 00 00 08 00 01 00 71 76 30 00 18 00 0d 80
                    14 00 03 80 08 00 01 00 05 03 1a 00 08 00 01 00
                    05 06 30 00");
    assert_eq!(
        ieee_add_apps_request("qv0", &[DcbApp::dscp(26, 3), DcbApp::dscp(48, 6)]),
        want
    );
}

#[test]
fn app_del_equals_dcb_app_del() {
    // dcb app del dev qv0 dscp-prio 26:3
    let want = hex("2c 00 00 00 4f 00 05 00 00 00 00 00 00 00 00 00
                    00 1b 00 00 08 00 01 00 71 76 30 00 10 00 0d 80
                    0c 00 03 80 08 00 01 00 05 03 1a 00");
    assert_eq!(ieee_del_apps_request("qv0", &[DcbApp::dscp(26, 3)]), want);
}

#[test]
fn pfc_set_follows_dcb_set_attribute() {
    let mut pfc = IeeePfc {
        pfc_cap: 8,
        pfc_en: 1 << 3,
        delay: 0x1234,
        ..IeeePfc::default()
    };
    pfc.requests[3] = 7;
    let req = ieee_set_pfc_request("qv0", &pfc);
    // header 16 + dcbmsg 4 + ifname 8 + nest 4 + attr 4 + 136
    assert_eq!(req.len(), 172);
    assert_eq!(&req[..4], &172u32.to_ne_bytes());
    assert_eq!(&req[4..8], &hex("4f 00 05 00")[..]);
    assert_eq!(&req[16..20], &hex("00 14 00 00")[..]);
    assert_eq!(&req[28..32], &hex("90 00 0d 80")[..]);
    assert_eq!(&req[32..36], &hex("8c 00 02 00")[..]);
    let body = &req[36..];
    assert_eq!(&body[..6], &hex("08 08 00 00 34 12")[..]);
    assert_eq!(IeeePfc::from_bytes(body), Ok(pfc));
}

#[test]
fn ets_set_follows_dcb_set_attribute() {
    let ets = IeeeEts {
        tc_tx_bw: [50, 50, 0, 0, 0, 0, 0, 0],
        tc_tsa: [TSA_ETS, TSA_ETS, 0, 0, 0, 0, 0, 0],
        prio_tc: [0, 0, 0, 1, 0, 0, 0, 0],
        ..IeeeEts::default()
    };
    let req = ieee_set_ets_request("qv0", &ets);
    // 59-byte payload: attribute length 63, padded to 64
    assert_eq!(req.len(), 16 + 4 + 8 + 4 + 64);
    assert_eq!(&req[28..32], &hex("44 00 0d 80")[..]);
    assert_eq!(&req[32..36], &hex("3f 00 01 00")[..]);
    assert_eq!(IeeeEts::from_bytes(&req[36..36 + 59]), Ok(ets));
    assert_eq!(&req[36 + 59..], &[0]);
}

#[test]
fn apptrust_set_follows_dcb_apptrust() {
    // dcb apptrust set dev qv0 order pcp dscp
    let req = ieee_set_apptrust_request("qv0", &[SEL_PCP, SEL_DSCP]);
    let want = hex("34 00 00 00 4f 00 05 00 00 00 00 00 00 00 00 00
                    00 14 00 00 08 00 01 00 71 76 30 00 18 00 0d 80
                    14 00 0b 80 05 00 02 00 ff 00 00 00 05 00 01 00
                    05 00 00 00");
    assert_eq!(req, want);
}

#[test]
fn get_answer_decodes() {
    let mut pfc = IeeePfc {
        pfc_en: 0x08,
        pfc_cap: 8,
        ..IeeePfc::default()
    };
    pfc.requests[3] = 11;
    pfc.indications[3] = 22;
    let ets = IeeeEts {
        tc_tx_bw: [100, 0, 0, 0, 0, 0, 0, 0],
        tc_tsa: [TSA_ETS; 8],
        ..IeeeEts::default()
    };
    // What the kernel's dcbnl_ieee_fill puts after the dcbmsg.
    let mut inner = Vec::new();
    super::super::nldev::attr::put(&mut inner, DCB_ATTR_IEEE_ETS, &ets.to_bytes());
    super::super::nldev::attr::put(&mut inner, DCB_ATTR_IEEE_PFC, &pfc.to_bytes());
    let mut apps = Vec::new();
    super::super::nldev::attr::put(&mut apps, DCB_ATTR_IEEE_APP, &[5, 3, 26, 0]);
    super::super::nldev::attr::put(&mut inner, DCB_ATTR_IEEE_APP_TABLE, &apps);
    let mut body = vec![0, DCB_CMD_IEEE_GET, 0, 0];
    super::super::nldev::attr::put_strz(&mut body, DCB_ATTR_IFNAME, "eth0");
    super::super::nldev::attr::put(&mut body, DCB_ATTR_IEEE, &inner);
    super::super::nldev::attr::put(&mut body, DCB_ATTR_DCBX, &[8]);
    let got = parse_ieee_get(&body).expect("decodes");
    assert_eq!(got.pfc, Some(pfc));
    assert_eq!(got.ets, Some(ets));
    assert_eq!(got.apps, vec![DcbApp::dscp(26, 3)]);
    assert_eq!(got.trust, None);
    assert_eq!(got.dcbx, Some(8));
}

#[test]
fn set_answer_errno_is_read() {
    let mut body = vec![0, DCB_CMD_IEEE_SET, 0, 0];
    super::super::nldev::attr::put(&mut body, DCB_ATTR_IEEE, &[(-95i8) as u8]);
    assert_eq!(set_reply_errno(&body), Ok(95));
    let mut ok = vec![0, DCB_CMD_IEEE_SET, 0, 0];
    super::super::nldev::attr::put(&mut ok, DCB_ATTR_IEEE, &[0]);
    assert_eq!(set_reply_errno(&ok), Ok(0));
}

#[test]
fn seq_is_written_in() {
    let r = with_seq(ieee_get_request("lo"), 0x0102_0304);
    assert_eq!(&r[8..12], &0x0102_0304u32.to_ne_bytes());
}

/// The running kernel's answer on `lo` (no netdev in software implements DCB): the typed
/// refusal with EOPNOTSUPP, as `dcb pfc show dev lo` prints "Operation not supported".
#[test]
fn kernel_refuses_dcb_on_lo() {
    let Ok(client) = super::DcbClient::open() else {
        return;
    };
    match client.get("lo") {
        Err(crate::kernel::HostError::Unsupported { what, why }) => {
            assert_eq!(what, "DCB read on lo");
            assert!(
                why.starts_with("the kernel answered EOPNOTSUPP (Operation not supported)"),
                "{why}"
            );
        }
        other => panic!("lo answered {other:?}"),
    }
}
