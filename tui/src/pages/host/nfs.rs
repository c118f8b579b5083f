//! The NFS over RDMA section and its form.

use super::sheet::{unit_style, unit_text, Sheet};
use super::*;

pub(super) fn nfs_section(s: &mut Sheet, host: &HostSetup) {
    let t = s.theme;
    let title = s.title("NFS over RDMA (NFS server)", "n change");
    let mut state = if host.nfs_rdma {
        vec![
            Span::styled("enabled", t.good()),
            Span::raw(format!(", port {}", host.nfs_rdma_port)),
        ]
    } else {
        vec![Span::styled("disabled", t.dim())]
    };
    let origins: Vec<String> = host
        .nfs_rdma_origin
        .iter()
        .map(|(k, v)| format!("{k} from {v}"))
        .collect();
    if !origins.is_empty() {
        state.push(Span::styled(format!("  ({})", origins.join(", ")), t.dim()));
    }
    let server = vec![Span::styled(
        unit_text(&host.nfs_server),
        unit_style(&host.nfs_server, t),
    )];
    let fw = if host.firewalld {
        vec![Span::raw("running (enabling opens the port)")]
    } else {
        vec![Span::styled("not running (no port to open)", t.dim())]
    };
    s.row(
        Row::Nfs,
        title,
        vec![
            Sheet::field("RDMA", 11, state),
            Sheet::field("nfs-server", 11, server),
            Sheet::field("firewalld", 11, fw),
        ],
    );
    for n in &host.nfs_notes {
        s.note(n, t.dim());
    }
}

pub(super) fn nfs_session(host: &HostSetup) -> Session<Dialog> {
    let port = if host.nfs_rdma_port == 0 {
        20049
    } else {
        host.nfs_rdma_port
    };
    let form = Form::new("NFS over RDMA", "Apply")
        .intro(vec![format!(
            "On: writes {NFS_DROPIN} (rdma=y), enables xprtrdma and svcrdma in rdma.conf, \
             opens the port in firewalld (tcp and udp), restarts nfs-server, enables it at boot \
             and checks that svcrdma is loaded. Off: removes the setting and restarts \
             nfs-server; the port stays open."
        )])
        .field(Field::check("enabled", "NFS over RDMA", host.nfs_rdma))
        .field(
            Field::text("port", "Port", &port.to_string(), 5)
                .with_note("1 to 65535; 20049 is the standard (nfsrdma)"),
        );
    let mut s = Session::new(form, Dialog::Nfs);
    check_nfs(&mut s.form, host);
    s
}

pub(super) fn check_nfs(form: &mut Form, host: &HostSetup) {
    let enabled = form.checked("enabled");
    let err = if enabled {
        check::nfs_port(form.text("port")).err()
    } else {
        None
    };
    form.set_error("port", err);
    let mut warn = Vec::new();
    if enabled && !host.nfs_server.unknown() && !host.nfs_server.installed() {
        warn.push("nfs-server is not installed: it is not restarted (skipped)");
    }
    if enabled && !host.firewalld {
        warn.push("firewalld does not run: no port is opened (skipped)");
    }
    form.set_warning("enabled", (!warn.is_empty()).then(|| warn.join("; ")));
}
