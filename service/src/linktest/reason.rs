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
}
