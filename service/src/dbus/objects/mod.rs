//! The bus objects, one file per interface (`root`, `device`, `port`, `ipoib`, `host`): its
//! properties, the pure function that computes them from the engine's [`ObservedState`]
//! (`port_view`, ...; a value the kernel did not give shows as empty or zero and is named in
//! the object's `Unreadable`), and its methods. Each object holds its property values in a
//! shared cell that the publisher replaces; getters read the cell and never touch the
//! kernel, so a slow kernel call can never hold up a property read or GetManagedObjects.
//!
//! [`ObservedState`]: crate::engine::ObservedState
//!
//! `bus_object!` declares, from one list, the view struct, its D-Bus getters, the comparison
//! that yields the PropertiesChanged payload and the full list GetManagedObjects encodes, so
//! they cannot drift apart. `bus_interface!` writes its methods: a change that only asks
//! polkit, calls the engine and maps its error is one `op` line.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use rdma_manager_dbus::text::cap_message;

use crate::model::Field;

/// A property cell shared by an object and the publisher.
pub type Cell<T> = Arc<RwLock<T>>;

/// A copy of a cell's value.
pub(crate) fn read<T: Clone>(cell: &Cell<T>) -> T {
    cell.read().unwrap_or_else(|p| p.into_inner()).clone()
}

/// Declares a `#[zbus::interface]` impl whose methods may be written as one-line operations:
///
/// ```text
/// /// Doc comment (the XML's documentation).
/// op remove_soft_link(name: &str) -> () as ManageLinks = |e| e.remove_soft_link(name).await;
/// op rename(new_name: &str) -> () as ManageNaming = |e, v| e.rename_device(v.index, new_name).await;
/// op set_mode(mode: &str) -> () as ManageIpoib
///     = |e, v| e.ipoib_set_mode(v.ifindex, mode).await, then super::ipoib::pending_if_any;
/// ```
///
/// An `op` is a change: it asks polkit for the [`Action`] (`Context::change`, which also
/// writes the audit line with every argument), runs the body with `e` the engine (and `v` a
/// copy of the object's view, for a `bus_object!`), turns the engine's error into the D-Bus
/// error (`errors::op_error`), and passes the result to `then` when given (a
/// `async fn(&Arc<Context>, T) -> Result<R, Error>`). Other methods and signals are written
/// as zbus wants them and kept in their place, which is the order the introspection (and so
/// the XML) lists them in.
macro_rules! bus_interface {
    (impl $obj:ident as $iface:literal { $($items:tt)* }) => {
        $crate::dbus::objects::bus_interface!(@munch $obj, $iface, [] $($items)*);
    };
    (@munch $obj:ident, $iface:literal, [$($acc:tt)*]) => {
        #[zbus::interface(name = $iface)]
        impl $obj {
            $($acc)*
        }
    };
    (@munch $obj:ident, $iface:literal, [$($acc:tt)*]
        $(#[$m:meta])* op $name:ident ($($arg:ident : $aty:ty),* $(,)?) -> $($rest:tt)*
    ) => {
        $crate::dbus::objects::bus_interface!(@op $obj, $iface, [$($acc)*],
            [$(#[$m])*], $name, [$($arg : $aty),*], [] $($rest)*);
    };
    // An operation's return type, token by token up to `as` (see `@ret`).
    (@op $obj:ident, $iface:literal, [$($acc:tt)*], [$($attrs:tt)*], $name:ident,
        [$($arg:ident : $aty:ty),*], [$($ret:tt)*]
        as $action:ident = |$e:ident $(, $v:ident)?| $body:expr $(, then $post:path)? ;
        $($rest:tt)*
    ) => {
        $crate::dbus::objects::bus_interface!(@munch $obj, $iface, [$($acc)*
            $($attrs)*
            async fn $name(
                &self,
                $($arg: $aty,)*
                #[zbus(header)] header: zbus::message::Header<'_>,
            ) -> Result<$($ret)*, rdma_manager_dbus::Error> {
                let arguments = $crate::audit_args![$($arg),*];
                self.ctx
                    .change(&header, rdma_manager_dbus::Action::$action, arguments, async {
                        $( let $v = $crate::dbus::objects::read(&self.view); )?
                        let $e = self.ctx.engine().await?;
                        let out = { $body }.map_err($crate::dbus::errors::op_error)?;
                        $( let out = $post(&self.ctx, out).await?; )?
                        Ok(out)
                    })
                    .await
            }
        ] $($rest)*);
    };
    (@op $obj:ident, $iface:literal, [$($acc:tt)*], [$($attrs:tt)*], $name:ident,
        [$($arg:ident : $aty:ty),*], [$($ret:tt)*] $t:tt $($rest:tt)*
    ) => {
        $crate::dbus::objects::bus_interface!(@op $obj, $iface, [$($acc)*], [$($attrs)*],
            $name, [$($arg : $aty),*], [$($ret)* $t] $($rest)*);
    };
    // Any other method, a property or a signal, as zbus wants it. Its return type is passed
    // on token by token (`@ret`): zbus recognises a `Result` only in the tokens themselves.
    (@munch $obj:ident, $iface:literal, [$($acc:tt)*]
        $(#[$m:meta])* $vis:vis async fn $name:ident $params:tt -> $($rest:tt)*
    ) => {
        $crate::dbus::objects::bus_interface!(@ret $obj, $iface, [$($acc)*],
            [$(#[$m])* $vis async fn $name $params ->], [] $($rest)*);
    };
    (@munch $obj:ident, $iface:literal, [$($acc:tt)*]
        $(#[$m:meta])* $vis:vis fn $name:ident $params:tt -> $($rest:tt)*
    ) => {
        $crate::dbus::objects::bus_interface!(@ret $obj, $iface, [$($acc)*],
            [$(#[$m])* $vis fn $name $params ->], [] $($rest)*);
    };
    (@ret $obj:ident, $iface:literal, [$($acc:tt)*], [$($head:tt)*], [$($ret:tt)*]
        { $($body:tt)* } $($rest:tt)*
    ) => {
        $crate::dbus::objects::bus_interface!(@munch $obj, $iface,
            [$($acc)* $($head)* $($ret)* { $($body)* }] $($rest)*);
    };
    // A signal: no body.
    (@ret $obj:ident, $iface:literal, [$($acc:tt)*], [$($head:tt)*], [$($ret:tt)*]
        ; $($rest:tt)*
    ) => {
        $crate::dbus::objects::bus_interface!(@munch $obj, $iface,
            [$($acc)* $($head)* $($ret)* ;] $($rest)*);
    };
    (@ret $obj:ident, $iface:literal, [$($acc:tt)*], [$($head:tt)*], [$($ret:tt)*]
        $t:tt $($rest:tt)*
    ) => {
        $crate::dbus::objects::bus_interface!(@ret $obj, $iface, [$($acc)*], [$($head)*],
            [$($ret)* $t] $($rest)*);
    };
}
pub(crate) use bus_interface;

macro_rules! bus_object {
    (
        $(#[$vmeta:meta])*
        view $view:ident;
        $(#[$ometa:meta])*
        object $obj:ident;
        interface $iface:literal;
        properties {
            $( $(#[$pmeta:meta])* $field:ident as $pname:literal : $ty:ty, )*
        }
        methods { $($methods:tt)* }
    ) => {
        $(#[$vmeta])*
        #[derive(Debug, Clone, Default, PartialEq)]
        pub struct $view {
            $( $(#[$pmeta])* pub $field: $ty, )*
        }

        impl $view {
            /// The properties that differ from `old`, by D-Bus name, as PropertiesChanged
            /// carries them.
            pub fn changed(&self, old: &$view) -> Vec<(&'static str, Value<'static>)> {
                let mut out = Vec::new();
                $(
                    if self.$field != old.$field {
                        out.push(($pname, Value::from(self.$field.clone())));
                    }
                )*
                out
            }

            /// Every property by D-Bus name, as GetAll and GetManagedObjects give them.
            pub fn all(&self) -> Vec<(&'static str, Value<'static>)> {
                vec![$( ($pname, Value::from(self.$field.clone())), )*]
            }
        }

        $(#[$ometa])*
        pub struct $obj {
            pub view: Cell<$view>,
            pub ctx: Arc<Context>,
        }

        // The getters go straight into the impl: they need no parsing.
        $crate::dbus::objects::bus_interface!(@munch $obj, $iface, [
            $(
                $(#[$pmeta])*
                #[zbus(property, name = $pname)]
                fn $field(&self) -> $ty {
                    self.view.read().unwrap_or_else(|p| p.into_inner()).$field.clone()
                }
            )*
        ] $($methods)*);
    };
}

mod device;
mod host;
mod ipoib;
mod port;
mod root;

pub use device::{device_view, kind_name, DeviceObject, DeviceView};
pub use host::{host_view, sm_verdict, HostSetupObject, HostSetupView};
pub use ipoib::{ipoib_view, IpoibLinks, IpoibObject, IpoibView};
pub use port::{port_view, PortObject, PortView};
pub use root::{root_view, RootObject, RootView};

/// Collects unreadable attributes while turning fields into plain values.
#[derive(Default)]
struct Unreadable(pub(crate) HashMap<String, String>);

impl Unreadable {
    pub(crate) fn take<T: Default + Clone>(&mut self, name: &str, f: &Field<T>) -> T {
        match f {
            Ok(v) => v.clone(),
            Err(e) => {
                self.0.insert(name.to_string(), e.to_string());
                T::default()
            }
        }
    }

    pub(crate) fn text<T>(
        &mut self,
        name: &str,
        f: &Field<T>,
        show: impl FnOnce(&T) -> String,
    ) -> String {
        match f {
            Ok(v) => show(v),
            Err(e) => {
                self.0.insert(name.to_string(), e.to_string());
                String::new()
            }
        }
    }
}

/// A map of texts from files, each key and value capped.
pub(crate) fn cap_map<'a>(
    m: impl IntoIterator<Item = (&'a String, &'a String)>,
) -> HashMap<String, String> {
    m.into_iter()
        .map(|(k, v)| (cap_message(k), cap_message(v)))
        .collect()
}
