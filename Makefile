# Build and install rdma-manager.
#
#   make build                  cargo build --release of the four programs, without the
#                               simulated host and the demo (features sim, demo)
#   make install                install into $(DESTDIR)$(PREFIX) (default /usr) and /etc
#   make uninstall              remove what install installed (not /etc/rdma-manager)
#
# install does not run cargo: it takes the binaries from $(BINDIR_SRC) (target/release by
# default), so a package build can run "make build" as a user and "make install" as root.
# Every directory can be overridden, e.g. make install DESTDIR=/tmp/root UNITDIR=/lib/systemd/system

CARGO ?= cargo
CARGOFLAGS ?= --locked
INSTALL ?= install

PREFIX ?= /usr
SBINDIR ?= $(PREFIX)/sbin
BINDIR ?= $(PREFIX)/bin
DATADIR ?= $(PREFIX)/share
MANDIR ?= $(DATADIR)/man
DOCDIR ?= $(DATADIR)/doc/rdma-manager
SYSCONFDIR ?= /etc
UNITDIR ?= $(PREFIX)/lib/systemd/system
UDEVRULESDIR ?= $(PREFIX)/lib/udev/rules.d
DBUSDIR ?= $(DATADIR)/dbus-1
POLKITACTIONSDIR ?= $(DATADIR)/polkit-1/actions
APPLICATIONSDIR ?= $(DATADIR)/applications
BASHCOMPDIR ?= $(DATADIR)/bash-completion/completions
ZSHCOMPDIR ?= $(DATADIR)/zsh/vendor-completions
FISHCOMPDIR ?= $(DATADIR)/fish/vendor_completions.d

# Where install takes the built binaries from.
BINDIR_SRC ?= target/release

# The Ansible collection rdmamanager.rdma, installed where ansible-core looks by default
# (its collections path includes /usr/share/ansible/collections).
ANSIBLECOLLECTIONSDIR ?= $(DATADIR)/ansible/collections
COLLECTIONDIR = $(ANSIBLECOLLECTIONSDIR)/ansible_collections/rdmamanager/rdma
COLLECTION_SRC := ansible/ansible_collections/rdmamanager/rdma
COLLECTION_FILES := galaxy.yml meta/runtime.yml README.md COPYING \
    $(patsubst $(COLLECTION_SRC)/%,%,$(wildcard $(COLLECTION_SRC)/plugins/*/*.py))

BUS_NAME := org.rdmamanager.RdmaManager1
UNIT := rdma-managerd.service
BUS_POLICY := dist/dbus/$(BUS_NAME).conf
BUS_SERVICE := dist/dbus/$(BUS_NAME).service
POLKIT_POLICY := dist/polkit/org.rdmamanager.rdmamanager1.policy
POLKIT_EXAMPLE := dist/polkit/50-rdma-manager-rdma-group.rules
UDEV_RULES := udev-rules/90-rdma-manager.rules
DESKTOP := dist/desktop/org.rdmamanager.RdmaTui.desktop
EXPORTER_UNIT := rdma-exporter.service
EXPORTER_SOCKET := rdma-exporter.socket
PROMETHEUS_EXAMPLES := dist/prometheus/prometheus.yml dist/prometheus/rdma-alerts.yml \
    dist/prometheus/rdma-alerts.test.yml dist/prometheus/grafana-dashboard.json
# The introspection XML of every interface; none (yet) is fine.
INTERFACE_XML ?= $(wildcard dbus-interfaces/xml/*.xml)

# The unit and the activation file name /usr/sbin/rdma-managerd; install rewrites it to $(SBINDIR).
SED_SBINDIR := sed -e 's|/usr/sbin/rdma-managerd|$(SBINDIR)/rdma-managerd|g'

.PHONY: all build install uninstall

all: build

# Only the three packages, without default features: a build of the whole workspace would turn
# on the simulated host (the tests crate's feature sim) and rdma-tui's demo, which links the
# daemon into the client.
build:
	$(CARGO) build --release $(CARGOFLAGS) -p rdma-managerd -p rdma-tui -p rdma-cli \
	    -p rdma-exporter --no-default-features --bin rdma-managerd --bin rdma-tui \
	    --bin rdma-cli --bin rdma-exporter

install:
	@for b in rdma-managerd rdma-tui rdma-cli rdma-exporter; do \
	    if [ ! -x "$(BINDIR_SRC)/$$b" ]; then \
	        echo "$(BINDIR_SRC)/$$b is missing: run 'make build' first" >&2; exit 1; \
	    fi; \
	done
	$(INSTALL) -d -m 0755 "$(DESTDIR)$(SBINDIR)" "$(DESTDIR)$(BINDIR)"
	$(INSTALL) -m 0755 "$(BINDIR_SRC)/rdma-managerd" "$(DESTDIR)$(SBINDIR)/rdma-managerd"
	$(INSTALL) -m 0755 "$(BINDIR_SRC)/rdma-tui" "$(DESTDIR)$(BINDIR)/rdma-tui"
	$(INSTALL) -m 0755 "$(BINDIR_SRC)/rdma-cli" "$(DESTDIR)$(BINDIR)/rdma-cli"
	$(INSTALL) -m 0755 "$(BINDIR_SRC)/rdma-exporter" "$(DESTDIR)$(BINDIR)/rdma-exporter"
	$(INSTALL) -d -m 0755 "$(DESTDIR)$(UNITDIR)"
	$(SED_SBINDIR) dist/systemd/$(UNIT) > "$(DESTDIR)$(UNITDIR)/$(UNIT)"
	chmod 0644 "$(DESTDIR)$(UNITDIR)/$(UNIT)"
	sed -e 's|/usr/bin/rdma-exporter|$(BINDIR)/rdma-exporter|g' dist/systemd/$(EXPORTER_UNIT) \
	    > "$(DESTDIR)$(UNITDIR)/$(EXPORTER_UNIT)"
	chmod 0644 "$(DESTDIR)$(UNITDIR)/$(EXPORTER_UNIT)"
	$(INSTALL) -m 0644 dist/systemd/$(EXPORTER_SOCKET) "$(DESTDIR)$(UNITDIR)/"
	$(INSTALL) -d -m 0755 "$(DESTDIR)$(DBUSDIR)/system.d" "$(DESTDIR)$(DBUSDIR)/system-services"
	$(INSTALL) -m 0644 $(BUS_POLICY) "$(DESTDIR)$(DBUSDIR)/system.d/"
	$(SED_SBINDIR) $(BUS_SERVICE) > "$(DESTDIR)$(DBUSDIR)/system-services/$(BUS_NAME).service"
	chmod 0644 "$(DESTDIR)$(DBUSDIR)/system-services/$(BUS_NAME).service"
ifneq ($(INTERFACE_XML),)
	$(INSTALL) -d -m 0755 "$(DESTDIR)$(DBUSDIR)/interfaces"
	$(INSTALL) -m 0644 $(INTERFACE_XML) "$(DESTDIR)$(DBUSDIR)/interfaces/"
endif
	$(INSTALL) -d -m 0755 "$(DESTDIR)$(POLKITACTIONSDIR)"
	$(INSTALL) -m 0644 $(POLKIT_POLICY) "$(DESTDIR)$(POLKITACTIONSDIR)/"
	$(INSTALL) -d -m 0755 "$(DESTDIR)$(UDEVRULESDIR)"
	$(INSTALL) -m 0644 $(UDEV_RULES) "$(DESTDIR)$(UDEVRULESDIR)/"
	$(INSTALL) -d -m 0755 "$(DESTDIR)$(MANDIR)/man8" "$(DESTDIR)$(MANDIR)/man1"
	$(INSTALL) -m 0644 dist/man/rdma-managerd.8 "$(DESTDIR)$(MANDIR)/man8/"
	$(INSTALL) -m 0644 dist/man/rdma-tui.1 "$(DESTDIR)$(MANDIR)/man1/"
	$(INSTALL) -m 0644 dist/man/rdma-cli.1 "$(DESTDIR)$(MANDIR)/man1/"
	$(INSTALL) -m 0644 dist/man/rdma-exporter.1 "$(DESTDIR)$(MANDIR)/man1/"
	$(INSTALL) -d -m 0755 "$(DESTDIR)$(DOCDIR)/examples"
	$(INSTALL) -m 0644 $(POLKIT_EXAMPLE) "$(DESTDIR)$(DOCDIR)/examples/"
	$(INSTALL) -d -m 0755 "$(DESTDIR)$(DOCDIR)/examples/prometheus"
	$(INSTALL) -m 0644 $(PROMETHEUS_EXAMPLES) "$(DESTDIR)$(DOCDIR)/examples/prometheus/"
	$(INSTALL) -d -m 0755 "$(DESTDIR)$(APPLICATIONSDIR)" "$(DESTDIR)$(BASHCOMPDIR)" \
	    "$(DESTDIR)$(ZSHCOMPDIR)" "$(DESTDIR)$(FISHCOMPDIR)"
	$(INSTALL) -m 0644 $(DESKTOP) "$(DESTDIR)$(APPLICATIONSDIR)/"
	$(INSTALL) -m 0644 dist/completions/rdma-tui.bash "$(DESTDIR)$(BASHCOMPDIR)/rdma-tui"
	$(INSTALL) -m 0644 dist/completions/_rdma-tui "$(DESTDIR)$(ZSHCOMPDIR)/_rdma-tui"
	$(INSTALL) -m 0644 dist/completions/rdma-tui.fish "$(DESTDIR)$(FISHCOMPDIR)/rdma-tui.fish"
	$(INSTALL) -m 0644 dist/completions/rdma-cli.bash "$(DESTDIR)$(BASHCOMPDIR)/rdma-cli"
	$(INSTALL) -m 0644 dist/completions/_rdma-cli "$(DESTDIR)$(ZSHCOMPDIR)/_rdma-cli"
	$(INSTALL) -m 0644 dist/completions/rdma-cli.fish "$(DESTDIR)$(FISHCOMPDIR)/rdma-cli.fish"
	$(INSTALL) -m 0644 dist/completions/rdma-managerd.bash "$(DESTDIR)$(BASHCOMPDIR)/rdma-managerd"
	$(INSTALL) -m 0644 dist/completions/_rdma-managerd "$(DESTDIR)$(ZSHCOMPDIR)/_rdma-managerd"
	$(INSTALL) -m 0644 dist/completions/rdma-managerd.fish "$(DESTDIR)$(FISHCOMPDIR)/rdma-managerd.fish"
	$(INSTALL) -d -m 0755 "$(DESTDIR)$(SYSCONFDIR)/rdma-manager"
	# NFS over RDMA is set in a drop-in there; nfs-utils reads it (since 2.5.3) but RHEL 9's
	# package does not ship the directory, and the sandboxed daemon cannot create it.
	$(INSTALL) -d -m 0755 "$(DESTDIR)$(SYSCONFDIR)/nfs.conf.d"
	for f in $(COLLECTION_FILES); do \
	    $(INSTALL) -D -m 0644 "$(COLLECTION_SRC)/$$f" "$(DESTDIR)$(COLLECTIONDIR)/$$f" || exit 1; \
	done
	$(INSTALL) -d -m 0755 "$(DESTDIR)$(DOCDIR)"
	$(INSTALL) -m 0644 docs/ANSIBLE.md "$(DESTDIR)$(DOCDIR)/"

# Leaves $(SYSCONFDIR)/rdma-manager alone: it holds the administrator's configuration and state.
uninstall:
	rm -rf "$(DESTDIR)$(COLLECTIONDIR)" "$(DESTDIR)$(DOCDIR)/ANSIBLE.md"
	-rmdir "$(DESTDIR)$(ANSIBLECOLLECTIONSDIR)/ansible_collections/rdmamanager" 2>/dev/null
	rm -f "$(DESTDIR)$(SBINDIR)/rdma-managerd" "$(DESTDIR)$(BINDIR)/rdma-tui"
	rm -f "$(DESTDIR)$(BINDIR)/rdma-cli" "$(DESTDIR)$(BINDIR)/rdma-exporter"
	rm -f "$(DESTDIR)$(UNITDIR)/$(EXPORTER_UNIT)" "$(DESTDIR)$(UNITDIR)/$(EXPORTER_SOCKET)"
	rm -f "$(DESTDIR)$(MANDIR)/man1/rdma-exporter.1"
	rm -f $(addprefix "$(DESTDIR)$(DOCDIR)/examples/prometheus/,$(addsuffix ",$(notdir $(PROMETHEUS_EXAMPLES))))
	-rmdir "$(DESTDIR)$(DOCDIR)/examples/prometheus" 2>/dev/null
	rm -f "$(DESTDIR)$(UNITDIR)/$(UNIT)"
	rm -f "$(DESTDIR)$(DBUSDIR)/system.d/$(BUS_NAME).conf"
	rm -f "$(DESTDIR)$(DBUSDIR)/system-services/$(BUS_NAME).service"
ifneq ($(INTERFACE_XML),)
	rm -f $(addprefix "$(DESTDIR)$(DBUSDIR)/interfaces/,$(addsuffix ",$(notdir $(INTERFACE_XML))))
endif
	rm -f "$(DESTDIR)$(POLKITACTIONSDIR)/$(notdir $(POLKIT_POLICY))"
	rm -f "$(DESTDIR)$(UDEVRULESDIR)/$(notdir $(UDEV_RULES))"
	rm -f "$(DESTDIR)$(MANDIR)/man8/rdma-managerd.8" "$(DESTDIR)$(MANDIR)/man1/rdma-tui.1"
	rm -f "$(DESTDIR)$(MANDIR)/man1/rdma-cli.1"
	rm -f "$(DESTDIR)$(DOCDIR)/examples/$(notdir $(POLKIT_EXAMPLE))"
	rm -f "$(DESTDIR)$(APPLICATIONSDIR)/$(notdir $(DESKTOP))"
	rm -f "$(DESTDIR)$(BASHCOMPDIR)/rdma-tui" "$(DESTDIR)$(ZSHCOMPDIR)/_rdma-tui"
	rm -f "$(DESTDIR)$(FISHCOMPDIR)/rdma-tui.fish"
	rm -f "$(DESTDIR)$(BASHCOMPDIR)/rdma-cli" "$(DESTDIR)$(ZSHCOMPDIR)/_rdma-cli"
	rm -f "$(DESTDIR)$(FISHCOMPDIR)/rdma-cli.fish"
	rm -f "$(DESTDIR)$(BASHCOMPDIR)/rdma-managerd" "$(DESTDIR)$(ZSHCOMPDIR)/_rdma-managerd"
	rm -f "$(DESTDIR)$(FISHCOMPDIR)/rdma-managerd.fish"
	-rmdir "$(DESTDIR)$(DOCDIR)/examples" "$(DESTDIR)$(DOCDIR)" 2>/dev/null
