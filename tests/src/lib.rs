//! Scenario suite shared by the simulated host tests and the kernel lab.
