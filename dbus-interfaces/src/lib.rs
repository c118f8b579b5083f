//! D-Bus names shared by rdma-managerd and its clients. The interfaces, their XML and the
//! client proxies are added with the D-Bus service.

/// The well-known bus name and interface prefix.
pub const BUS_NAME: &str = "org.rdmamanager.RdmaManager1";
/// The root object (ObjectManager).
pub const ROOT_PATH: &str = "/org/rdmamanager/RdmaManager1";
/// Prefix of every D-Bus error the service returns (`<prefix>.InvalidArgument`, ...).
pub const ERROR_PREFIX: &str = "org.rdmamanager.RdmaManager1.Error";
/// Prefix of the polkit action ids (`<prefix>.manage-links`, ...).
pub const POLKIT_PREFIX: &str = "org.rdmamanager.rdmamanager1";

/// Object path of an RDMA device, by its kernel index (which survives a rename).
pub fn device_path(index: u32) -> String {
    format!("{ROOT_PATH}/Device/{index}")
}

/// Object path of a port of a device.
pub fn port_path(index: u32, port: u32) -> String {
    format!("{}/Port/{port}", device_path(index))
}

/// Object path of an IPoIB interface, by ifindex.
pub fn ipoib_path(ifindex: u32) -> String {
    format!("{ROOT_PATH}/Ipoib/{ifindex}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        assert_eq!(device_path(3), "/org/rdmamanager/RdmaManager1/Device/3");
        assert_eq!(
            port_path(3, 1),
            "/org/rdmamanager/RdmaManager1/Device/3/Port/1"
        );
        assert_eq!(ipoib_path(12), "/org/rdmamanager/RdmaManager1/Ipoib/12");
    }
}
