//! Whether a line's domain applies to the subject: users, groups, uid and gid ranges.

use super::lex::{parse_range, Range};
use super::*;

/// Whether a line's domain applies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Match {
    Yes(DomainClass),
    No,
    Depends(String),
    /// `%` and `%group`: maxlogins only.
    Percent,
}

impl Subject {
    fn in_group(&self, name: &str) -> bool {
        self.groups.iter().any(|g| g.name == name)
    }

    fn in_gid(&self, gid: u32) -> Match {
        if self.groups.iter().any(|g| g.gid == Some(gid)) {
            Match::Yes(DomainClass::Group)
        } else if self.groups.iter().any(|g| g.gid.is_none()) {
            Match::Depends(format!(
                "applies if one of the user's groups has gid {gid}, which is not known here"
            ))
        } else {
            Match::No
        }
    }

    fn primary_in(&self, min: u32, max: Option<u32>, class: DomainClass) -> Match {
        match self.primary_gid {
            Some(g) => in_range(g, min, max, class),
            None => Match::Depends(format!(
                "applies to members whose primary group's gid is {}",
                range_text(min, max)
            )),
        }
    }

    fn uid_in(&self, min: u32, max: Option<u32>) -> Match {
        match self.uid {
            Some(u) => in_range(u, min, max, DomainClass::User),
            None => Match::Depends(format!(
                "applies to members whose uid is {}",
                range_text(min, max)
            )),
        }
    }
}

fn in_range(v: u32, min: u32, max: Option<u32>, class: DomainClass) -> Match {
    if v >= min && max.is_none_or(|m| v <= m) {
        Match::Yes(class)
    } else {
        Match::No
    }
}

fn range_text(min: u32, max: Option<u32>) -> String {
    match max {
        Some(m) if m == min => format!("{m}"),
        Some(m) => format!("from {min} to {m}"),
        None => format!("{min} or more"),
    }
}

/// `@group` and gid ranges, alike in both kinds of line.
fn match_group(group: &str, range: Range, subject: &Subject) -> Match {
    match range {
        Range::None if subject.in_group(group) => Match::Yes(DomainClass::Group),
        Range::None => Match::No,
        Range::One(gid) => subject.in_gid(gid),
        Range::MinMax(min, max) => subject.primary_in(min, Some(max), DomainClass::Group),
        Range::Min(min) => subject.primary_in(min, None, DomainClass::Group),
    }
}

/// A uid range (a user entry); `None` for a domain without one.
fn match_uid_range(range: Range, subject: &Subject) -> Option<Match> {
    match range {
        Range::None => None,
        Range::One(uid) => Some(subject.uid_in(uid, Some(uid))),
        Range::MinMax(min, max) => Some(subject.uid_in(min, Some(max))),
        Range::Min(min) => Some(subject.uid_in(min, None)),
    }
}

/// The domain of a four-field line (`parse_config_file()`'s `i == 4` branch).
pub(super) fn match_entry(domain: &str, subject: &Subject) -> Match {
    // Already checked by parse_line.
    let range = parse_range(domain).unwrap_or(Range::None);
    if subject.user.as_deref() == Some(domain) {
        return Match::Yes(DomainClass::User);
    }
    if let Some(group) = domain.strip_prefix('@') {
        return match_group(group, range, subject);
    }
    if domain.starts_with('%') {
        return Match::Percent;
    }
    match_uid_range(range, subject).unwrap_or(if domain == "*" {
        Match::Yes(DomainClass::Default)
    } else {
        Match::No
    })
}

/// The domain of a `<domain> -` line: the user, a group of theirs, or a uid range; never `*`.
pub(super) fn match_no_limits(domain: &str, subject: &Subject) -> Match {
    let range = parse_range(domain).unwrap_or(Range::None);
    if subject.user.as_deref() == Some(domain) {
        return Match::Yes(DomainClass::User);
    }
    if let Some(group) = domain.strip_prefix('@') {
        return match_group(group, range, subject);
    }
    // Here '%' is not special: "%:5 -" is read as a uid range.
    match_uid_range(range, subject).unwrap_or(Match::No)
}
