//! nmcli's `KEY VALUE` settings (`type rxe netdev eth1`): each key once, each with a value,
//! in any order, only the keys the command knows.

use std::collections::BTreeMap;

use crate::failure::Failure;

/// The pairs of `words`, by key; refuses an unknown or repeated key and a key without a
/// value, naming the keys `known`.
pub fn pairs(words: &[String], known: &[&str]) -> Result<BTreeMap<String, String>, Failure> {
    let mut out = BTreeMap::new();
    let mut it = words.iter();
    while let Some(key) = it.next() {
        if !known.contains(&key.as_str()) {
            return Err(Failure::usage(format!(
                "{key:?} is not a setting here; expected {}",
                known.join(", ")
            )));
        }
        let Some(value) = it.next() else {
            return Err(Failure::usage(format!("{key} needs a value")));
        };
        if out.insert(key.clone(), value.clone()).is_some() {
            return Err(Failure::usage(format!("{key} is given twice")));
        }
    }
    Ok(out)
}

/// `on`/`off` (and yes/no, true/false, 1/0, as nmcli takes them).
pub fn on_off(what: &str, word: &str) -> Result<bool, Failure> {
    match word {
        "on" | "yes" | "true" | "1" => Ok(true),
        "off" | "no" | "false" | "0" => Ok(false),
        _ => Err(Failure::usage(format!("{what}: {word:?} is not on or off"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn pairs_in_any_order_once_each() {
        let p = pairs(&w("netdev eth1 type rxe"), &["type", "netdev"]).expect("pairs");
        assert_eq!(p["type"], "rxe");
        assert_eq!(p["netdev"], "eth1");
        assert!(pairs(&w("type rxe type siw"), &["type"]).is_err());
        assert!(pairs(&w("type"), &["type"]).is_err());
        let e = pairs(&w("colour red"), &["type", "netdev"]).unwrap_err();
        assert_eq!(e.code, 2);
        assert!(e.message.contains("type, netdev"), "{}", e.message);
    }

    #[test]
    fn on_and_off() {
        assert_eq!(on_off("umcast", "on"), Ok(true));
        assert_eq!(on_off("umcast", "no"), Ok(false));
        assert!(on_off("umcast", "maybe").is_err());
    }
}
