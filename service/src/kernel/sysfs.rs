//! sysfs and configfs readers.
