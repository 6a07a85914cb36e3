//! A kernel socket filter (classic BPF) in front of the SRT port: datagrams that
//! srt-tokio 0.4.4 would stop on (`unimplemented!` in its packet parser and connection
//! code) are dropped by the kernel before the listener reads them, so no stranger's
//! datagram can end the listener task and with it every publisher's connection.
//!
//! Dropped: a handshake carrying an extension other than HSREQ/HSRSP (1, 2), KMREQ (3)
//! and the stream id (5) — congestion control (6), packet filter (7) and group (8) are
//! not served here — or more than [`MAX_EXTENSIONS`] of them; an SRT user-defined control
//! packet (type 0x7FFF) of a subtype other than 1–4 (a stream id, congestion or group
//! message inside a connection). Everything else passes untouched: data packets, the
//! other control packets and the handshakes libsrt, OBS and ffmpeg send for live
//! publish. A caller configured for file transfer (`transtype=file`) therefore times out
//! instead of being refused.

use std::io;
use std::net::UdpSocket;

use socket2::{SockFilter, SockRef};

/// The most handshake extensions walked; a handshake with more is dropped (libsrt sends
/// at most HSREQ, KMREQ, SID, congestion, filter and group).
pub const MAX_EXTENSIONS: usize = 6;

/// A UDP socket's filter sees the datagram from its UDP header on: the SRT packet
/// starts this far in.
const UDP_HEADER: u32 = 8;

/// Where a handshake's extensions start: the 16-byte SRT header and the 48-byte
/// handshake body.
const EXTENSIONS_AT: u32 = UDP_HEADER + 64;

// Classic BPF opcodes (linux/filter.h).
const LD_H_ABS: u16 = 0x28;
const LD_H_IND: u16 = 0x48;
const LD_W_LEN: u16 = 0x80;
const LDX_IMM: u16 = 0x01;
const ALU_SUB_X: u16 = 0x1c;
const ALU_ADD_X: u16 = 0x0c;
const ALU_ADD_K: u16 = 0x04;
const ALU_LSH_K: u16 = 0x64;
const JEQ_K: u16 = 0x15;
const JGE_K: u16 = 0x35;
const JA: u16 = 0x05;
const RET_K: u16 = 0x06;
const TAX: u16 = 0x07;

/// How many bytes of an accepted datagram the socket keeps: all of them.
const KEEP_ALL: u32 = 0x0004_0000;

/// An instruction whose jumps name labels, resolved by [`assemble`].
enum Op {
    Stmt(u16, u32),
    /// A conditional jump: to `yes` when it holds, else to `no`.
    Jump(u16, u32, Label, Label),
    /// Always to the label.
    Goto(Label),
    Here(Label),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Label {
    Next,
    Accept,
    Drop,
    Handshake,
    User,
    ExtensionOk(usize),
    Extension(usize),
}

/// The filter program.
pub fn program() -> Vec<SockFilter> {
    use Label::*;
    let mut ops = vec![
        Op::Stmt(LD_H_ABS, UDP_HEADER),
        Op::Jump(JEQ_K, 0x8000, Handshake, Next),
        Op::Jump(JEQ_K, 0xffff, User, Accept),
        Op::Here(User),
        Op::Stmt(LD_H_ABS, UDP_HEADER + 2),
        Op::Jump(JEQ_K, 1, Accept, Next),
        Op::Jump(JEQ_K, 2, Accept, Next),
        Op::Jump(JEQ_K, 3, Accept, Next),
        Op::Jump(JEQ_K, 4, Accept, Drop),
        Op::Here(Handshake),
        Op::Stmt(LDX_IMM, EXTENSIONS_AT),
    ];
    for n in 0..MAX_EXTENSIONS {
        ops.extend([
            Op::Here(Extension(n)),
            // Fewer than 4 bytes left: no further extension.
            Op::Stmt(LD_W_LEN, 0),
            Op::Stmt(ALU_SUB_X, 0),
            Op::Jump(JGE_K, 4, Next, Accept),
            Op::Stmt(LD_H_IND, 0),
            Op::Jump(JEQ_K, 1, ExtensionOk(n), Next),
            Op::Jump(JEQ_K, 2, ExtensionOk(n), Next),
            Op::Jump(JEQ_K, 3, ExtensionOk(n), Next),
            Op::Jump(JEQ_K, 5, ExtensionOk(n), Drop),
            Op::Here(ExtensionOk(n)),
            // Past this extension: 4 bytes of type and length, then length words.
            Op::Stmt(LD_H_IND, 2),
            Op::Stmt(ALU_LSH_K, 2),
            Op::Stmt(ALU_ADD_K, 4),
            Op::Stmt(ALU_ADD_X, 0),
            Op::Stmt(TAX, 0),
        ]);
    }
    ops.extend([
        Op::Goto(Drop),
        Op::Here(Accept),
        Op::Stmt(RET_K, KEEP_ALL),
        Op::Here(Drop),
        Op::Stmt(RET_K, 0),
    ]);
    assemble(&ops)
}

/// Resolves labels into the relative offsets classic BPF jumps take.
fn assemble(ops: &[Op]) -> Vec<SockFilter> {
    let mut at = Vec::new();
    let mut index = 0usize;
    for op in ops {
        match op {
            Op::Here(label) => at.push((*label, index)),
            _ => index += 1,
        }
    }
    let find = |label: Label, from: usize| -> u8 {
        let target = if label == Label::Next {
            from + 1
        } else {
            at.iter()
                .find(|(l, _)| *l == label)
                .map(|(_, i)| *i)
                .expect("every label is placed")
        };
        u8::try_from(target - from - 1).expect("a forward jump under 256")
    };
    let mut out = Vec::new();
    for op in ops {
        let i = out.len();
        match op {
            Op::Here(_) => {}
            Op::Stmt(code, k) => out.push(SockFilter::new(*code, 0, 0, *k)),
            Op::Jump(code, k, yes, no) => {
                out.push(SockFilter::new(*code, find(*yes, i), find(*no, i), *k));
            }
            Op::Goto(label) => out.push(SockFilter::new(JA, 0, 0, u32::from(find(*label, i)))),
        }
    }
    out
}

/// Attaches [`program`] to the SRT socket.
///
/// # Errors
/// The kernel refused the filter (no classic BPF socket filters on this system).
pub fn attach(socket: &UdpSocket) -> io::Result<()> {
    SockRef::from(socket).attach_filter(&program())
}
