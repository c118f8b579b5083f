//! pam_limits' pass over the files: priorities, `-` lines, the soft limit lowered to the hard.

use super::lex::{interpret_value, parse_line, Fields};
use super::matching::{match_entry, match_no_limits, Match};
use super::*;

#[derive(Debug, Clone)]
pub(super) struct Slot {
    pub(super) class: DomainClass,
    pub(super) value: MemlockValue,
    pub(super) origin: Origin,
    pub(super) domain: String,
}

/// A daemon-file entry that matched, for the outcome.
#[derive(Debug, Clone)]
pub(super) struct DaemonHit {
    pub(super) soft: bool,
    pub(super) hard: bool,
}

#[derive(Default)]
pub(super) struct State {
    pub(super) soft: Option<Slot>,
    pub(super) hard: Option<Slot>,
    pub(super) no_limits: Option<NoLimitsLine>,
    pub(super) conditional: Vec<ConditionalEntry>,
    pub(super) notes: Vec<LineNote>,
    pub(super) files_read: Vec<String>,
    pub(super) daemon_hits: Vec<DaemonHit>,
}

impl State {
    pub(super) fn note(
        &mut self,
        origin: &Origin,
        text: &str,
        kind: NoteKind,
        reason: impl Into<String>,
    ) {
        self.notes.push(LineNote {
            origin: origin.clone(),
            text: text.to_string(),
            kind,
            reason: reason.into(),
        });
    }

    /// `process_limit()`'s last step for memlock.
    pub(super) fn apply(&mut self, ltype: &str, slot: Slot, text: &str) {
        let outranks = |held: &Option<Slot>| {
            held.as_ref()
                .is_some_and(|h| h.class.rank() < slot.class.rank())
        };
        let soft = matches!(ltype, "soft" | "-");
        let hard = matches!(ltype, "hard" | "-");
        if soft {
            if outranks(&self.soft) {
                if hard {
                    let origin = slot.origin.clone();
                    self.note(
                        &origin,
                        text,
                        NoteKind::Ignored,
                        "a '-' line whose soft part is outranked by an earlier, more specific \
                        entry stops there: pam_limits does not set its hard part either",
                    );
                }
                return;
            }
            self.soft = Some(slot.clone());
        }
        if hard && !outranks(&self.hard) {
            self.hard = Some(slot);
        }
    }

    /// One line; `false` when pam_limits stops reading.
    pub(super) fn line(
        &mut self,
        origin: Origin,
        body: &[u8],
        subject: &Subject,
        daemon: bool,
    ) -> bool {
        let fields = parse_line(body);
        let text = String::from_utf8_lossy(body).trim_end().to_string();
        match fields {
            Fields::Nothing => true,
            Fields::Invalid => {
                self.note(
                    &origin,
                    &text,
                    NoteKind::Skipped,
                    "not a limit line: pam_limits wants <domain> <type> <item> <value>, or \
                    <domain> - (no limits)",
                );
                true
            }
            Fields::BadRange(domain) => {
                self.note(
                    &origin,
                    &text,
                    NoteKind::Skipped,
                    format!(
                        "{domain_q} is not a valid uid or gid range",
                        domain_q = quote_capped(&domain)
                    ),
                );
                true
            }
            Fields::NoLimits { domain } => match match_no_limits(&domain, subject) {
                Match::Yes(_) => {
                    self.no_limits = Some(NoLimitsLine { origin, domain });
                    false
                }
                Match::Depends(reason) => {
                    self.conditional.push(ConditionalEntry {
                        origin,
                        text,
                        reason: format!("{reason}; for them pam_limits sets no limit at all"),
                    });
                    true
                }
                _ => true,
            },
            Fields::Entry {
                domain,
                ltype,
                item,
                value,
                old_value,
            } => {
                if item != "memlock" {
                    return true;
                }
                let m = match_entry(&domain, subject);
                if m == Match::No {
                    return true;
                }
                if !matches!(ltype.as_str(), "soft" | "hard" | "-") {
                    self.note(
                        &origin,
                        &text,
                        NoteKind::Skipped,
                        format!(
                            "unknown limit type {ltype_q}: use soft, hard or -",
                            ltype_q = quote_capped(&ltype)
                        ),
                    );
                    return true;
                }
                let read = interpret_value(&value);
                let old = old_value.as_deref().map(interpret_value);
                if old.is_some_and(|o| o != read) {
                    let show = |r: Result<MemlockValue, ()>| {
                        r.map_or("the line skipped".to_string(), |v| v.to_string())
                    };
                    self.note(
                        &origin,
                        &text,
                        NoteKind::VersionDependent,
                        format!(
                            "Linux-PAM 1.6.0 and later read the value {value_q} as {}, older \
                            versions (RHEL 9's 1.5.1, Debian 12's 1.5.2) read only its first word: \
                            {}",
                            show(read),
                            show(old.unwrap_or(Err(()))),
                            value_q = quote_capped(&value)
                        ),
                    );
                }
                let Ok(v) = read else {
                    let why = format!(
                        "{value_q} is not a limit value: pam_limits logs \"wrong limit value\" \
                         and skips the line",
                        value_q = quote_capped(&value)
                    );
                    self.note(&origin, &text, NoteKind::Skipped, why);
                    return true;
                };
                let class = match m {
                    Match::Yes(c) => c,
                    Match::Depends(reason) => {
                        self.conditional.push(ConditionalEntry {
                            origin,
                            text,
                            reason,
                        });
                        return true;
                    }
                    Match::Percent => {
                        self.note(
                            &origin,
                            &text,
                            NoteKind::Ignored,
                            "'%' domains only set maxlogins",
                        );
                        return true;
                    }
                    Match::No => return true,
                };
                if daemon {
                    self.daemon_hits.push(DaemonHit {
                        soft: matches!(ltype.as_str(), "soft" | "-"),
                        hard: matches!(ltype.as_str(), "hard" | "-"),
                    });
                }
                self.apply(
                    &ltype,
                    Slot {
                        class,
                        value: v,
                        origin,
                        domain,
                    },
                    &text,
                );
                true
            }
        }
    }
}

/// The memlock limits `subject` gets from `sources`, as pam_limits computes them.
pub fn resolve(sources: &LimitsSources, subject: &Subject) -> MemlockResolution {
    let mut st = State::default();
    let mut caveats = Vec::new();
    let mut files: Vec<(&str, &[u8])> = Vec::new();
    match &sources.limits_conf {
        Some(b) => files.push((LIMITS_CONF, b)),
        None if sources.limits_conf_unread => caveats.push(format!(
            "{LIMITS_CONF} exists but could not be read (see ConfigErrors): these limits \
            leave it out"
        )),
        None => caveats.push(format!(
            "{LIMITS_CONF} is missing: Linux-PAM 1.5.3 and later skip it, older \
            versions (RHEL 9's 1.5.1, Debian 12's 1.5.2) fail the session instead"
        )),
    }
    let mut dropins: Vec<&LimitsFile> = sources
        .dropins
        .iter()
        .filter(|f| {
            let n = base_name(&f.path);
            n.ends_with(".conf") && !n.starts_with('.')
        })
        .collect();
    dropins.sort_by(|a, b| base_name(&a.path).cmp(base_name(&b.path)));
    files.extend(
        dropins
            .iter()
            .map(|f| (f.path.as_str(), f.bytes.as_slice())),
    );
    'files: for (path, bytes) in &files {
        st.files_read.push(path.to_string());
        let daemon = *path == DAEMON_FILE;
        for l in conf_lines::lines(bytes) {
            let origin = Origin {
                file: path.to_string(),
                line: l.number,
            };
            if !st.line(origin, l.body, subject, daemon) {
                break 'files;
            }
        }
    }
    if subject.uid == Some(0) || subject.user.as_deref() == Some("root") {
        caveats.push(
            "Debian's pam_limits does not apply group and '*' entries to root: only \
            entries naming root count there"
                .into(),
        );
    }
    let daemon_file = sources
        .dropins
        .iter()
        .find(|f| f.path == DAEMON_FILE)
        .map(|f| daemon_report(&st, f));
    let setting = |s: &Option<Slot>| match (&st.no_limits, s) {
        (Some(n), _) => LimitSetting::NotSet {
            why: format!(
                "{} (\"{} -\") tells pam_limits to set no limits for this user; the \
                    limit is {NOT_SET}",
                n.origin, n.domain
            ),
        },
        (None, Some(s)) => LimitSetting::Set {
            value: s.value,
            origin: s.origin.clone(),
            domain: s.domain.clone(),
            class: s.class,
        },
        (None, None) => LimitSetting::NotSet {
            why: NOT_SET.to_string(),
        },
    };
    let soft = setting(&st.soft);
    let hard = setting(&st.hard);
    let soft_lowered_to_hard = matches!((soft.value(), hard.value()), (Some(s), Some(h)) if s > h);
    MemlockResolution {
        soft,
        hard,
        soft_lowered_to_hard,
        no_limits: st.no_limits.clone(),
        conditional: st.conditional,
        notes: st.notes,
        files_read: st.files_read,
        daemon_file,
        caveats,
    }
}

/// The memlock limits of a member of `group` who matches no user entry.
pub fn resolve_group_member(
    sources: &LimitsSources,
    group: &str,
    gid: Option<u32>,
) -> MemlockResolution {
    resolve(sources, &Subject::member_of(group, gid))
}

fn daemon_report(st: &State, file: &LimitsFile) -> DaemonFileReport {
    let group_of_file = read_daemon_group(&file.bytes);
    let settings = group_of_file.as_deref().map_or(
        DaemonSettings {
            soft: None,
            hard: None,
        },
        |g| read_daemon_file(&file.bytes, g),
    );
    let outcome = |has: bool, hit: bool, slot: &Option<Slot>| -> DaemonOutcome {
        if !has {
            return DaemonOutcome::NoEntry;
        }
        if let Some(n) = &st.no_limits {
            return DaemonOutcome::NoLimitsLine {
                by: n.origin.clone(),
                domain: n.domain.clone(),
            };
        }
        if !hit {
            return DaemonOutcome::NotForThisUser;
        }
        match slot {
            Some(s) if s.origin.file == DAEMON_FILE => DaemonOutcome::Effective,
            Some(s) => {
                let reason = if s.class == DomainClass::User {
                    format!(
                        "the user entry {} outranks group entries wherever it is",
                        s.domain
                    )
                } else {
                    format!(
                        "{} is read after {DAEMON_FILE_NAME} (C-locale order of the names), and \
                            the last entry of the same kind wins",
                        base_name(&s.origin.file)
                    )
                };
                DaemonOutcome::Overridden {
                    by: s.origin.clone(),
                    domain: s.domain.clone(),
                    reason,
                }
            }
            // The daemon's line matched but set nothing: a '-' line cut short cannot happen in
            // the daemon's own file; be explicit rather than claim it is effective.
            None => DaemonOutcome::NotForThisUser,
        }
    };
    let soft_hit = st.daemon_hits.iter().any(|h| h.soft);
    let hard_hit = st.daemon_hits.iter().any(|h| h.hard);
    DaemonFileReport {
        path: file.path.clone(),
        settings,
        soft: outcome(settings.soft.is_some(), soft_hit, &st.soft),
        hard: outcome(settings.hard.is_some(), hard_hit, &st.hard),
    }
}

/// The group the daemon's file is about: the first `@group` domain of a memlock line.
fn read_daemon_group(bytes: &[u8]) -> Option<String> {
    conf_lines::lines(bytes).find_map(|l| match parse_line(l.body) {
        Fields::Entry { domain, item, .. } if item == "memlock" => {
            domain.strip_prefix('@').map(str::to_string)
        }
        _ => None,
    })
}
