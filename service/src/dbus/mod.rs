pub mod polkit;
