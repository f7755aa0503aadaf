//! Integration tests of arbor-backends: the scheduler's policies run through
//! the virtual-clock driver against hand-computed schedules.

mod body;
mod build;
mod doctor;
mod fetch;
mod history;
mod http;
mod identity;
mod live;
mod messages;
mod policies;
mod preflight;
mod record;
mod reliability;
mod responses;
mod retry;
mod routing;
mod server;
mod std_server;
mod tls;
