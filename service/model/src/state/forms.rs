//! Values the document accepts in more than one YAML form, read into the one form the types
//! keep: a P_Key as nmstate's hex string or as an integer, a memlock limit as `unlimited` or
//! a number of KiB written bare.

use std::fmt;

use serde::de::{self, Deserializer, Visitor};

/// A P_Key: a string is kept as written (checked later, with its path); an integer becomes
/// nmstate's form, `0x` and four lower-case hex digits.
pub(crate) fn pkey<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    struct V;
    impl Visitor<'_> for V {
        type Value = Option<String>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a P_Key: a hex string such as \"0x8002\", or an integer")
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok(Some(v.to_string()))
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
            Ok(Some(format!("{v:#06x}")))
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
            match u64::try_from(v) {
                Ok(v) => self.visit_u64(v),
                Err(_) => Err(E::custom(format!(
                    "{v} is not a P_Key: P_Keys are 0x0001 to 0xffff"
                ))),
            }
        }
    }
    d.deserialize_any(V)
}

/// A memlock limit: `unlimited` or a number of KiB, quoted or not.
pub(crate) fn memlock<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    struct V;
    impl Visitor<'_> for V {
        type Value = Option<String>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("\"unlimited\" or a number of KiB")
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok(Some(v.to_string()))
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
            Ok(Some(v.to_string()))
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
            Ok(Some(v.to_string()))
        }
    }
    d.deserialize_any(V)
}
