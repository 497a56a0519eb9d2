//! The server core driven in process, without a socket: a connection fed lines, its answers read
//! from the output it writes to.

mod support;

mod dispatch;
