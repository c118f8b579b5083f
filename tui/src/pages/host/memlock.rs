//! The memlock section: the limits of group rdma, the line that set each, and the form that
//! sets or resets the daemon's own file.

use super::sheet::Sheet;
use super::*;

/// A value of MemlockSoft/MemlockHard in words.
pub(super) fn limit_text(v: &str) -> String {
    match v {
        "" => "not set".into(),
        "unlimited" => "unlimited".into(),
        kib => match kib.parse::<u64>() {
            Ok(k) if k >= 1024 * 1024 && k % (1024 * 1024) == 0 => {
                format!("{k} KiB ({} GiB)", k / (1024 * 1024))
            }
            Ok(k) if k >= 1024 && k % 1024 == 0 => format!("{k} KiB ({} MiB)", k / 1024),
            Ok(k) => format!("{k} KiB"),
            Err(_) => kib.to_string(),
        },
    }
}

pub(super) fn memlock_section(s: &mut Sheet, host: &HostSetup) {
    let t = s.theme;
    let title = s.title("Pinned memory (memlock) of group rdma", "m set  M reset");
    let origin = |k: &str| -> Span<'static> {
        match host.memlock_origin.get(k) {
            Some(o) => Span::styled(format!("  from {o}"), t.dim()),
            None => Span::styled("  (no limits file sets it)", t.dim()),
        }
    };
    let value = |v: &str| -> Span<'static> {
        let style = if v.is_empty() { t.warn() } else { t.normal() };
        Span::styled(limit_text(v), style)
    };
    let mut soft = Sheet::field("Soft", 4, vec![value(&host.memlock_soft)]);
    soft.push(origin("soft"));
    let mut hard = Sheet::field("Hard", 4, vec![value(&host.memlock_hard)]);
    hard.push(origin("hard"));
    s.row(Row::Memlock, title, vec![soft, hard]);
    let managed = &host.memlock_managed;
    if managed.soft.is_empty() && managed.hard.is_empty() {
        s.para(
            &format!("rdma-manager's file ({MEMLOCK_FILE}): none"),
            t.dim(),
            2,
        );
    } else {
        s.para(
            &format!(
                "rdma-manager's file ({MEMLOCK_FILE}): soft {}, hard {}",
                limit_text(&managed.soft),
                limit_text(&managed.hard)
            ),
            t.normal(),
            2,
        );
    }
    for n in &host.memlock_notes {
        s.note(n, t.dim());
    }
}

pub(super) fn memlock_session(host: &HostSetup) -> Session<Dialog> {
    let managed = &host.memlock_managed;
    let pick = |v: &str| if v.is_empty() { "unlimited" } else { v }.to_string();
    let form = Form::new("Pinned memory of group rdma", "Set")
        .intro(vec![format!(
            "Writes {MEMLOCK_FILE} (@rdma soft/hard memlock). Members of group rdma get the \
             limits from their next login."
        )])
        .field(
            Field::text("soft", "Soft", &pick(&managed.soft), 20)
                .with_note("\"unlimited\" or KiB (65536 = 64 MiB); at most the hard limit"),
        )
        .field(
            Field::text("hard", "Hard", &pick(&managed.hard), 20)
                .with_note("\"unlimited\" or KiB; the most a process may raise its limit to"),
        );
    let mut s = Session::new(form, Dialog::Memlock);
    check_memlock(&mut s.form);
    s
}

pub(super) fn check_memlock(form: &mut Form) {
    let soft = form.text("soft").to_string();
    let hard = form.text("hard").to_string();
    let hard_err = check::memlock_value(&hard).err();
    let soft_err = match check::memlock_value(&soft) {
        Err(e) => Some(e),
        Ok(_) if hard_err.is_none() => check::memlock_pair(&soft, &hard).err(),
        Ok(_) => None,
    };
    form.set_error("soft", soft_err);
    form.set_error("hard", hard_err);
}

/// Notes of SetMemlockLimits: the service's, with when they apply said in any case.
pub(super) fn memlock_notes(notes: &[String]) -> Vec<String> {
    let mut v = notes.to_vec();
    if !v.iter().any(|n| n.contains("login")) {
        v.insert(0, "The limits apply from the next login.".into());
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_in_words() {
        assert_eq!(limit_text(""), "not set");
        assert_eq!(limit_text("unlimited"), "unlimited");
        assert_eq!(limit_text("65536"), "65536 KiB (64 MiB)");
        assert_eq!(limit_text("1048576"), "1048576 KiB (1 GiB)");
        assert_eq!(limit_text("100"), "100 KiB");
    }
}
