//! Reading a state document: YAML (so JSON too), into [`State`], refusing with the key path
//! and the line anything the types do not take (unknown keys, wrong types, a top level that
//! is not a mapping), then checking it with [`super::check`].

use super::doc::State;
use super::lines::Lines;
use crate::state_error::{capped_reason, StateError};

/// A parsed document and where its keys are, for errors found later ([`StateError::with_lines`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    pub state: State,
    pub lines: Lines,
}

/// Reads and checks a document. An empty document (nothing, comments only, `---`, `~`) is
/// the empty state, which changes nothing.
pub fn parse(text: &str) -> Result<State, StateError> {
    parse_document(text).map(|d| d.state)
}

/// [`parse`], keeping the lines of the document's keys.
pub fn parse_document(text: &str) -> Result<Document, StateError> {
    let doc = read(text)?;
    super::check::check(&doc.state).map_err(|e| e.with_lines(&doc.lines))?;
    Ok(doc)
}

/// Reads a document into the types, without the checks of [`super::check`].
pub fn read(text: &str) -> Result<Document, StateError> {
    let state = match deserialize(text) {
        Ok(state) => state,
        // The typed reading streams: the document as a whole tells a syntax error further on
        // (reported before a wrong type met first), an empty document and a top level that is
        // not a mapping.
        Err(typed) => match serde_yaml_ng::from_str::<serde_yaml_ng::Value>(text) {
            Err(e) => {
                let line = e.location().map(|l| l.line());
                return Err(match message_of(&e) {
                    // A duplicate key: YAML, but not a document.
                    (path, reason) if !path.is_empty() => StateError::Invalid {
                        path,
                        line,
                        reason: capped_reason(&reason),
                    },
                    (_, message) => StateError::Syntax {
                        line,
                        message: capped_reason(&message),
                    },
                });
            }
            Ok(serde_yaml_ng::Value::Null) => State::default(),
            Ok(serde_yaml_ng::Value::Sequence(_)) => return Err(not_a_mapping("a list")),
            Ok(serde_yaml_ng::Value::Mapping(_)) => return Err(typed),
            Ok(_) => return Err(not_a_mapping("a single value")),
        },
    };
    Ok(Document {
        state,
        lines: Lines::of(text),
    })
}

fn not_a_mapping(found: &str) -> StateError {
    StateError::Invalid {
        path: String::new(),
        line: Some(1),
        reason: format!(
            "the document is {found}; it must be a mapping of sections (soft-links, roce, \
             interfaces, naming, modules, memlock, nfs-rdma, subnet-manager, responder, health, \
             ports, sriov-vfs)"
        ),
    }
}

fn deserialize(text: &str) -> Result<State, StateError> {
    let de = serde_yaml_ng::Deserializer::from_str(text);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = match e.path().to_string() {
            p if p == "." => String::new(),
            p => p,
        };
        let inner = e.into_inner();
        let line = inner.location().map(|l| l.line());
        StateError::Invalid {
            path,
            line,
            reason: capped_reason(&message_of(&inner).1),
        }
    })
}

/// The serde parser's message split into the key path it prepends to a refused value
/// (`roce[0].port: invalid type ...`; empty when none) and the message without the
/// positions it appends (` at line 3 column 5`; the error gives them apart).
fn message_of(e: &serde_yaml_ng::Error) -> (String, String) {
    let mut text = e.to_string();
    while let Some(at) = text.find(" at line ") {
        let rest = &text[at + " at line ".len()..];
        let digits = |s: &str| s.bytes().take_while(u8::is_ascii_digit).count();
        let n = digits(rest);
        let Some(after) = rest[n..].strip_prefix(" column ") else {
            break;
        };
        let m = digits(after);
        if n == 0 || m == 0 {
            break;
        }
        let end = at + " at line ".len() + n + " column ".len() + m;
        text.replace_range(at..end, "");
    }
    if let Some((head, rest)) = text.split_once(": ") {
        if !head.contains(' ') && !head.is_empty() && !rest.is_empty() {
            return (head.to_string(), rest.to_string());
        }
    }
    (String::new(), text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::doc::*;

    fn err(text: &str) -> String {
        read(text).map(|_| ()).unwrap_err().to_string()
    }

    #[test]
    fn empty_documents_are_the_empty_state() {
        for text in [
            "",
            "\n",
            "# nothing\n",
            "---\n",
            "~\n",
            "null",
            "---\n# c\n...\n",
        ] {
            assert_eq!(read(text).expect(text).state, State::default(), "{text:?}");
        }
        assert_eq!(read("{}").expect("{}").state, State::default());
    }

    #[test]
    fn a_full_document() {
        let text = "\
soft-links:
  - name: rxe0
    type: rxe
    netdev: eth1
  - name: siw0
    state: absent
roce:
  - device: mlx5_0
    port: 1
    mode: v2
    tos: 106
interfaces:
  - name: ib0
    type: infiniband
    mtu: 65520
    infiniband:
      mode: connected
      umcast: false
    ipv4:
      enabled: true
      dhcp: false
      address:
        - ip: 192.0.2.1
          prefix-length: 24
      gateway: 192.0.2.254
      dns: [192.0.2.53]
  - name: ib0.8002
    type: infiniband
    infiniband:
      base-iface: ib0
      pkey: 0x8002
naming:
  rdma-policy: NAME_KERNEL
  rdma-fixed-names:
    - node-guid: 0002:c903:0031:7f40
      name: ibp0
modules:
  rdma:
    ib_ipoib: true
memlock:
  soft: unlimited
  hard: 8192
nfs-rdma: {enabled: true, port: 20049}
subnet-manager: {enabled: true, running: false}
";
        let s = read(text).expect("parses").state;
        let links = s.soft_links.as_ref().expect("links");
        assert_eq!(links[0].kind, Some(SoftLinkKind::Rxe));
        assert_eq!(links[1].state, Some(EntryState::Absent));
        let roce = &s.roce.as_ref().expect("roce")[0];
        assert_eq!(
            (roce.port, roce.mode, roce.tos),
            (1, Some(RoceVersion::V2), Some(106))
        );
        let ifs = s.interfaces.as_ref().expect("interfaces");
        let ib = ifs[0].infiniband.as_ref().expect("ib");
        assert_eq!(ib.mode, Some(StateIpoibMode::Connected));
        let v4 = ifs[0].ipv4.as_ref().expect("v4");
        assert_eq!(v4.address.as_ref().expect("a")[0].prefix_length, 24);
        assert_eq!(v4.dns, Some(vec!["192.0.2.53".to_string()]));
        // An unquoted 0x8002 is YAML's integer 32770: read into nmstate's string.
        let child = ifs[1].infiniband.as_ref().expect("child");
        assert_eq!(child.pkey.as_deref(), Some("0x8002"));
        assert_eq!(child.base_iface.as_deref(), Some("ib0"));
        let fixed = &s
            .naming
            .as_ref()
            .expect("n")
            .rdma_fixed_names
            .as_ref()
            .expect("f")[0];
        assert_eq!(fixed.node_guid, "0002:c903:0031:7f40");
        assert!(s.modules.as_ref().expect("m")["rdma"]["ib_ipoib"]);
        let m = s.memlock.as_ref().expect("memlock");
        assert_eq!(
            (m.soft.as_deref(), m.hard.as_deref()),
            (Some("unlimited"), Some("8192"))
        );
        assert_eq!(s.nfs_rdma.as_ref().and_then(|n| n.port), Some(20049));
        assert_eq!(
            s.subnet_manager.as_ref().and_then(|n| n.running),
            Some(false)
        );
    }

    #[test]
    fn json_is_yaml() {
        let s = read(r#"{"roce": [{"device": "mlx5_0", "port": 1, "tos": 0}], "interfaces": [{"name": "ib0.8002", "type": "infiniband", "infiniband": {"base-iface": "ib0", "pkey": 32770}}]}"#)
            .expect("json")
            .state;
        assert_eq!(s.roce.expect("roce")[0].tos, Some(0));
        let ifs = s.interfaces.expect("ifs");
        assert_eq!(
            ifs[0].infiniband.as_ref().and_then(|i| i.pkey.as_deref()),
            Some("0x8002")
        );
    }

    #[test]
    fn unknown_keys_name_path_and_line() {
        let text = "soft-links:\n  - name: rxe0\n    type: rxe\n    netdv: eth1\n";
        let e = read(text).unwrap_err();
        assert!(
            matches!(&e, StateError::Invalid { path, line: Some(4), .. } if path == "soft-links[0].netdv"),
            "{e:?}"
        );
        assert!(
            e.to_string()
                .starts_with("line 4: soft-links[0].netdv: unknown field `netdv`, expected one of"),
            "{e}"
        );
        let long = format!("{}: 1\n", "k".repeat(1 << 20));
        assert!(err(&long).len() < 3000);
        assert_eq!(
            err("colour: blue\n").split(", expected").next(),
            Some("line 1: colour: unknown field `colour`")
        );
    }

    #[test]
    fn wrong_types_name_path_and_line() {
        let text = "roce:\n  - device: mlx5_0\n    port: one\n";
        assert_eq!(
            err(text),
            "line 3: roce[0].port: invalid type: string \"one\", expected u32"
        );
        assert_eq!(
            err("roce:\n  - device: mlx5_0\n    port: 1\n    tos: 256\n"),
            "line 4: roce[0].tos: invalid value: integer `256`, expected u8"
        );
        assert_eq!(
            err("roce:\n  - device: mlx5_0\n    port: 1\n    mode: v3\n"),
            "line 4: roce[0].mode: unknown variant `v3`, expected `v1` or `v2`"
        );
        assert_eq!(
            err("subnet-manager:\n  enabled: yes\n"),
            "line 2: subnet-manager.enabled: invalid type: string \"yes\", expected a boolean"
        );
        assert_eq!(
            err("interfaces:\n  - name: ib0\n    type: infiniband\n    infiniband:\n      pkey: [1]\n"),
            "line 5: interfaces[0].infiniband.pkey: invalid type: sequence, expected a P_Key: a hex string such as \"0x8002\", or an integer"
        );
        assert_eq!(
            err("soft-links: {}\n"),
            "line 1: soft-links: invalid type: map, expected a sequence"
        );
    }

    #[test]
    fn missing_keys_name_the_entry() {
        let e = read("interfaces:\n  - mtu: 2044\n    name: ib0\n").unwrap_err();
        assert_eq!(e.path(), "interfaces[0]");
        assert!(e.to_string().contains("missing field `type`"), "{e}");
        assert_eq!(e.line(), Some(2));
    }

    #[test]
    fn not_a_mapping() {
        assert_eq!(
            err("- a\n- b\n"),
            "line 1: the document is a list; it must be a mapping of sections (soft-links, roce, interfaces, naming, modules, memlock, nfs-rdma, subnet-manager, responder, health, ports, sriov-vfs)"
        );
        assert!(err("hello\n").starts_with("line 1: the document is a single value;"));
        assert!(err("[]").starts_with("line 1: the document is a list;"));
    }

    #[test]
    fn syntax_errors() {
        let e = read("soft-links:\n  - name: [rxe0\n").unwrap_err();
        assert!(
            matches!(e, StateError::Syntax { line: Some(_), .. }),
            "{e:?}"
        );
        let e = read("a: 1\n---\nb: 2\n").unwrap_err();
        assert!(matches!(e, StateError::Syntax { .. }), "{e:?}");
        assert_eq!(
            err("soft-links:\n  - name: [rxe0\n"),
            "line 3: did not find expected ',' or ']', while parsing a flow sequence"
        );
        assert_eq!(
            err("memlock:\n  soft: 1\n soft: 2\n"),
            "line 3: did not find expected key, while parsing a block mapping"
        );
        assert_eq!(
            err("\tx: 1\n"),
            "line 1: found character that cannot start any token, while scanning for the next token"
        );
        assert_eq!(
            err("memlock:\n  soft: 1\n  soft: 2\n"),
            "line 2: memlock: duplicate entry with key \"soft\""
        );
    }
}
