//! Integration tests of the emulator over loopback (127.0.0.1 only; at
//! most a few hundred streams, seconds each), of the server model, and of
//! calibration in process (run directories under cargo's target tmp dir).

mod api;
mod cache;
mod calibrate;
mod faults;
mod fleet;
mod load;
mod messages;
mod profile;
mod server;
mod slow_clients;
mod support;
mod timing;
