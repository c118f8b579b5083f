//! Why a link test did not pass: a fixed vocabulary, the same on the bus, in JSON and in the
//! command line's exit code, so that scripts branch on it without reading the sentence.

/// The typed reason of a failed test (`LinkTestResult.reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// The port (or its netdev) is not up: nothing was run.
    PortDown,
    /// No route to the peer: the address does not resolve from this port (no ARP or
    /// neighbour answer, no route, the network unreachable).
    NoRoute,
    /// The peer answered nothing: no echo reply, no answer to rdma_cm's connection request.
    NoResponder,
    /// The peer's RDMA CM refused the connection (REJ), or its server ended the test.
    Rejected,
    /// The test did not end within its timeout; its processes were killed.
    Timeout,
    /// The tool could not run the test here (no device, memory it could not register, no
    /// permission), with its own sentence.
    ToolFailed,
    /// The tool's output was not what it prints (a version that prints otherwise): refused
    /// rather than guessed.
    UnexpectedOutput,
}

impl Reason {
    pub const ALL: [Reason; 7] = [
        Reason::PortDown,
        Reason::NoRoute,
        Reason::NoResponder,
        Reason::Rejected,
        Reason::Timeout,
        Reason::ToolFailed,
        Reason::UnexpectedOutput,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Reason::PortDown => "port-down",
            Reason::NoRoute => "no-route",
            Reason::NoResponder => "no-responder",
            Reason::Rejected => "rejected",
            Reason::Timeout => "timeout",
            Reason::ToolFailed => "tool-failed",
            Reason::UnexpectedOutput => "unexpected-output",
        }
    }
}

/// A failed test: the reason and a sentence that says what happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub reason: Reason,
    pub detail: String,
}

impl Failure {
    pub fn new(reason: Reason, detail: impl Into<String>) -> Failure {
        Failure {
            reason,
            detail: detail.into(),
        }
    }

    /// An [`Reason::UnexpectedOutput`] failure with what the tool printed appended, so that a
    /// format the parser does not know can be read from the result itself (the rest of the
    /// result's detail is capped with the whole); other failures as they are.
    pub fn with_output(mut self, output: &super::sandbox::Output) -> Failure {
        if self.reason == Reason::UnexpectedOutput {
            self.detail.push_str(&format!("; {}", raw_output(output)));
        }
        self
    }
}

/// The most of a tool's output a failure's detail quotes, in bytes: within the message cap
/// with the sentence before it.
pub const RAW_OUTPUT_BYTES: usize = 3072;

/// What a tool printed, for a failure's detail: its exit status, then stdout and stderr
/// with their line breaks as ` | `; a longer text keeps its first and last parts (the
/// settings block and the result or error at the end) around the bytes left out.
pub fn raw_output(out: &super::sandbox::Output) -> String {
    let flat = |s: &str| {
        s.lines()
            .map(str::trim_end)
            .filter(|l| !l.trim().is_empty())
            .collect::<Vec<_>>()
            .join(" | ")
    };
    let status = match out.code {
        Some(c) => format!("exit status {c}"),
        None => "ended by a signal".to_string(),
    };
    let text = format!(
        "stdout: {} || stderr: {}",
        flat(&out.stdout),
        flat(&out.stderr)
    );
    let text = if text.len() <= RAW_OUTPUT_BYTES {
        text
    } else {
        let head = rdma_manager_dbus::text::head(&text, RAW_OUTPUT_BYTES / 3);
        let mut from = text.len() - (RAW_OUTPUT_BYTES - head.len() - 40);
        while !text.is_char_boundary(from) {
            from += 1;
        }
        format!(
            "{head} … ({} bytes left out) … {}",
            from - head.len(),
            &text[from..]
        )
    };
    format!(
        "the tool printed ({status}{}): {text}",
        if out.truncated {
            ", cut at the read bound"
        } else {
            ""
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linktest::sandbox::Output;

    #[test]
    fn unexpected_output_keeps_what_the_tool_printed_and_nothing_else_does() {
        let out = Output {
            code: Some(0),
            stdout: " Send Latency Test\n\n Device : rxe0\n".into(),
            stderr: "warning: odd\n".into(),
            ..Output::default()
        };
        let f = Failure::new(
            Reason::UnexpectedOutput,
            "perftest's output has no result line",
        )
        .with_output(&out);
        assert_eq!(
            f.detail,
            "perftest's output has no result line; the tool printed (exit status 0): stdout:  \
             Send Latency Test |  Device : rxe0 || stderr: warning: odd"
        );
        let g = Failure::new(Reason::NoRoute, "no route").with_output(&out);
        assert_eq!(g.detail, "no route");
    }

    #[test]
    fn a_long_output_keeps_its_start_and_its_end_within_the_bound() {
        let out = Output {
            code: None,
            stdout: format!("FIRST\n{}LAST\n", "x line\n".repeat(5000)),
            truncated: true,
            ..Output::default()
        };
        let raw = raw_output(&out);
        assert!(raw.len() <= RAW_OUTPUT_BYTES + 200, "{}", raw.len());
        assert!(
            raw.contains("FIRST") && raw.ends_with("LAST || stderr: "),
            "{raw}"
        );
        assert!(raw.contains("bytes left out") && raw.contains("ended by a signal"));
        assert!(raw.contains("cut at the read bound"));
        // Within the message cap the result's detail is given, with a sentence before it.
        assert!(raw.len() + 512 < rdma_manager_dbus::text::MESSAGE_MAX_BYTES);
    }
}
