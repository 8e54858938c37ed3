//! The block grammar `llvm-xray` 14 enforces (its `BlockVerifier` and `BlockIndexer`).

use super::records::Record;

/// The last record kind a [`BlockVerifier`] saw in the current block.
///
/// Names and [`Display`](core::fmt::Display) follow LLVM's `BlockVerifier::State`.
///
/// ```
/// use flightrec_core::fdr::decoder::{BlockState, BlockVerifier};
/// use flightrec_core::fdr::records::Record;
/// let mut v = BlockVerifier::new();
/// assert_eq!(v.state(), BlockState::Unknown);
/// v.feed(&Record::NewBuffer { tid: 1 }).unwrap();
/// assert_eq!(v.state(), BlockState::NewBuffer);
/// assert_eq!(BlockState::PidEntry.to_string(), "PIDEntry");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum BlockState {
    /// Nothing yet: the next record must be a NewBuffer.
    Unknown,
    /// After NewBuffer: a WalltimeMarker must follow.
    NewBuffer,
    /// After WalltimeMarker: a Pid or a NewCPUId must follow.
    WallClockTime,
    /// After Pid: a NewCPUId must follow.
    PidEntry,
    /// After NewCPUId.
    NewCpuId,
    /// After TSCWrap.
    TscWrap,
    /// After a custom event.
    CustomEvent,
    /// After a typed event.
    TypedEvent,
    /// After a function record: CallArgument records may follow.
    Function,
    /// After a CallArgument: more may follow.
    CallArg,
    /// After EndOfBuffer: everything up to the next NewBuffer is ignored.
    EndOfBuffer,
}

impl BlockState {
    /// The state a record leads to, or `None` for BufferExtents, which LLVM's block
    /// indexer drops before the verifier sees a block.
    ///
    /// ```
    /// use flightrec_core::fdr::decoder::BlockState;
    /// use flightrec_core::fdr::records::Record;
    /// assert_eq!(BlockState::of(&Record::CallArgument { value: 1 }), Some(BlockState::CallArg));
    /// assert_eq!(BlockState::of(&Record::BufferExtents { size: 64 }), None);
    /// ```
    pub const fn of(record: &Record<'_>) -> Option<Self> {
        Some(match record {
            Record::Function { .. } => BlockState::Function,
            Record::NewBuffer { .. } => BlockState::NewBuffer,
            Record::EndOfBuffer => BlockState::EndOfBuffer,
            Record::NewCpuId { .. } => BlockState::NewCpuId,
            Record::TscWrap { .. } => BlockState::TscWrap,
            Record::Walltime { .. } => BlockState::WallClockTime,
            Record::CustomEvent { .. } => BlockState::CustomEvent,
            Record::CallArgument { .. } => BlockState::CallArg,
            Record::BufferExtents { .. } => return None,
            Record::TypedEvent { .. } => BlockState::TypedEvent,
            Record::Pid { .. } => BlockState::PidEntry,
        })
    }

    /// LLVM's name for the state, as its error messages print it.
    ///
    /// ```
    /// use flightrec_core::fdr::decoder::BlockState;
    /// assert_eq!(BlockState::WallClockTime.name(), "WallClockTime");
    /// assert_eq!(BlockState::NewCpuId.name(), "NewCPUId");
    /// ```
    pub const fn name(self) -> &'static str {
        match self {
            BlockState::Unknown => "Unknown",
            BlockState::NewBuffer => "NewBuffer",
            BlockState::WallClockTime => "WallClockTime",
            BlockState::PidEntry => "PIDEntry",
            BlockState::NewCpuId => "NewCPUId",
            BlockState::TscWrap => "TSCWrap",
            BlockState::CustomEvent => "CustomEvent",
            BlockState::TypedEvent => "TypedEvent",
            BlockState::Function => "Function",
            BlockState::CallArg => "CallArg",
            BlockState::EndOfBuffer => "EndOfBuffer",
        }
    }

    /// Whether a block may end in this state. A block that stops inside its preamble
    /// (NewBuffer, WalltimeMarker, Pid) or never started may not.
    ///
    /// ```
    /// use flightrec_core::fdr::decoder::BlockState;
    /// assert!(BlockState::NewCpuId.is_terminal());
    /// assert!(BlockState::CallArg.is_terminal());
    /// assert!(!BlockState::PidEntry.is_terminal());
    /// assert!(!BlockState::Unknown.is_terminal());
    /// ```
    pub const fn is_terminal(self) -> bool {
        !matches!(
            self,
            BlockState::Unknown
                | BlockState::NewBuffer
                | BlockState::WallClockTime
                | BlockState::PidEntry
        )
    }

    /// Whether `to` may follow this state within a block (LLVM's transition table).
    ///
    /// After the preamble every body record may follow every other, except that a
    /// CallArgument may only follow a function record or another CallArgument.
    /// EndOfBuffer allows nothing here: what follows it is ignored by
    /// [`BlockVerifier::feed`] instead.
    ///
    /// ```
    /// use flightrec_core::fdr::decoder::BlockState;
    /// assert!(BlockState::Function.allows(BlockState::CallArg));
    /// assert!(!BlockState::TscWrap.allows(BlockState::CallArg));
    /// assert!(BlockState::WallClockTime.allows(BlockState::PidEntry));
    /// assert!(!BlockState::WallClockTime.allows(BlockState::Function));
    /// ```
    pub const fn allows(self, to: BlockState) -> bool {
        use BlockState as S;
        match self {
            S::Unknown => matches!(to, S::NewBuffer),
            S::NewBuffer => matches!(to, S::WallClockTime),
            S::WallClockTime => matches!(to, S::PidEntry | S::NewCpuId),
            S::PidEntry => matches!(to, S::NewCpuId),
            S::NewCpuId | S::TscWrap | S::CustomEvent | S::TypedEvent => matches!(
                to,
                S::NewCpuId
                    | S::TscWrap
                    | S::CustomEvent
                    | S::TypedEvent
                    | S::Function
                    | S::EndOfBuffer
            ),
            S::Function | S::CallArg => matches!(
                to,
                S::NewCpuId
                    | S::TscWrap
                    | S::CustomEvent
                    | S::TypedEvent
                    | S::Function
                    | S::CallArg
                    | S::EndOfBuffer
            ),
            S::EndOfBuffer => false,
        }
    }
}

impl core::fmt::Display for BlockState {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

/// A violation of the block grammar, found by [`BlockVerifier`].
///
/// ```
/// use flightrec_core::fdr::decoder::{BlockState, BlockVerifier, VerifyError};
/// use flightrec_core::fdr::records::Record;
/// let mut v = BlockVerifier::new();
/// let err = v.feed(&Record::Pid { pid: 1 }).unwrap_err();
/// assert_eq!(err, VerifyError::InvalidTransition { from: BlockState::Unknown, to: BlockState::PidEntry });
/// assert_eq!(err.to_string(), "invalid transition from Unknown to PIDEntry");
/// assert_eq!(v.finish(), Err(VerifyError::NoBuffers));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum VerifyError {
    /// A record that may not follow the previous one (LLVM: "BlockVerifier: Invalid
    /// transition from PIDEntry to Function.").
    InvalidTransition {
        /// State before the record.
        from: BlockState,
        /// The record's state.
        to: BlockState,
    },
    /// A block ended inside its preamble (LLVM: "BlockVerifier: Invalid terminal
    /// condition WallClockTime, malformed block.").
    InvalidTerminal {
        /// The state the block ended in.
        state: BlockState,
    },
    /// The log holds no block at all (a header-only file); `llvm-xray convert`
    /// rejects it.
    NoBuffers,
}

impl core::fmt::Display for VerifyError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            VerifyError::InvalidTransition { from, to } => {
                write!(f, "invalid transition from {from} to {to}")
            }
            VerifyError::InvalidTerminal { state } => write!(
                f,
                "block ends after a {state} record, inside its preamble (it needs at least a NewCPUId)"
            ),
            VerifyError::NoBuffers => write!(f, "no buffer in the log"),
        }
    }
}

impl core::error::Error for VerifyError {}

/// Checks the record grammar of an FDR log, one record at a time, as `llvm-xray` 14
/// does when it loads a file.
///
/// LLVM splits the record stream into blocks at each NewBuffer record (dropping
/// BufferExtents records), and checks each block with a state machine:
///
/// ```text
/// NewBuffer WalltimeMarker [Pid] NewCPUId Body* [EndOfBuffer ignored*]
/// Body := NewCPUId | TSCWrap | CustomEvent | TypedEvent | Function CallArgument*
/// ```
///
/// A block must not end inside its preamble, and a log must hold at least one block.
/// Whether a record exists in a version at all (EndOfBuffer after version 1) is the
/// decoder's business, not the verifier's.
///
/// ```
/// use flightrec_core::fdr::decoder::{BlockState, BlockVerifier, VerifyError};
/// use flightrec_core::fdr::records::Record;
///
/// let mut v = BlockVerifier::new();
/// v.feed(&Record::NewBuffer { tid: 1 }).unwrap();
/// v.feed(&Record::Walltime { seconds: 1, micros: 0 }).unwrap();
/// assert_eq!(v.finish(), Err(VerifyError::InvalidTerminal { state: BlockState::WallClockTime }));
/// v.feed(&Record::Pid { pid: 7 }).unwrap();
/// assert_eq!(
///     v.feed(&Record::TscWrap { tsc: 5 }),
///     Err(VerifyError::InvalidTransition { from: BlockState::PidEntry, to: BlockState::TscWrap })
/// );
/// v.feed(&Record::NewCpuId { cpu: 0, tsc: 5 }).unwrap();
/// assert_eq!(v.finish(), Ok(()));
/// assert_eq!(v.blocks(), 1);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct BlockVerifier {
    state: BlockState,
    blocks: usize,
}

impl Default for BlockVerifier {
    fn default() -> Self {
        Self::new()
    }
}

impl BlockVerifier {
    /// A verifier that has seen nothing.
    ///
    /// ```
    /// use flightrec_core::fdr::decoder::{BlockState, BlockVerifier};
    /// let v = BlockVerifier::new();
    /// assert_eq!((v.state(), v.blocks()), (BlockState::Unknown, 0));
    /// ```
    pub const fn new() -> Self {
        Self {
            state: BlockState::Unknown,
            blocks: 0,
        }
    }

    /// The state after the last record fed.
    ///
    /// ```
    /// use flightrec_core::fdr::decoder::{BlockState, BlockVerifier};
    /// use flightrec_core::fdr::records::Record;
    /// let mut v = BlockVerifier::new();
    /// v.feed(&Record::NewBuffer { tid: 1 }).unwrap();
    /// v.feed(&Record::Walltime { seconds: 0, micros: 0 }).unwrap();
    /// assert_eq!(v.state(), BlockState::WallClockTime);
    /// ```
    pub const fn state(&self) -> BlockState {
        self.state
    }

    /// Number of blocks (NewBuffer records) seen so far.
    ///
    /// ```
    /// use flightrec_core::fdr::decoder::BlockVerifier;
    /// use flightrec_core::fdr::records::Record;
    /// let mut v = BlockVerifier::new();
    /// for tid in 1..=2 {
    ///     v.feed(&Record::NewBuffer { tid }).unwrap();
    ///     v.feed(&Record::Walltime { seconds: 0, micros: 0 }).unwrap();
    ///     v.feed(&Record::NewCpuId { cpu: 0, tsc: 0 }).unwrap();
    /// }
    /// assert_eq!(v.blocks(), 2);
    /// ```
    pub const fn blocks(&self) -> usize {
        self.blocks
    }

    /// Checks the next record of the log.
    ///
    /// A NewBuffer first checks that the current block, if any, ended in a valid
    /// state, then starts a new block. BufferExtents records are ignored. After an
    /// EndOfBuffer everything but a NewBuffer is ignored. On error the state is left
    /// unchanged.
    ///
    /// ```
    /// use flightrec_core::fdr::decoder::{BlockState, BlockVerifier, VerifyError};
    /// use flightrec_core::fdr::records::Record;
    /// let mut v = BlockVerifier::new();
    /// v.feed(&Record::BufferExtents { size: 48 }).unwrap(); // not part of the grammar
    /// v.feed(&Record::NewBuffer { tid: 1 }).unwrap();
    /// // A new block while this one is still in its preamble.
    /// assert_eq!(
    ///     v.feed(&Record::NewBuffer { tid: 2 }),
    ///     Err(VerifyError::InvalidTerminal { state: BlockState::NewBuffer })
    /// );
    /// assert_eq!(v.state(), BlockState::NewBuffer);
    /// ```
    pub fn feed(&mut self, record: &Record<'_>) -> Result<(), VerifyError> {
        let Some(to) = BlockState::of(record) else {
            return Ok(());
        };
        if to == BlockState::NewBuffer {
            // LLVM verifies each block on its own and resets in between; a block that
            // did not start with NewBuffer has already failed its first transition.
            if self.state != BlockState::Unknown && !self.state.is_terminal() {
                return Err(VerifyError::InvalidTerminal { state: self.state });
            }
            self.state = BlockState::NewBuffer;
            self.blocks = self.blocks.saturating_add(1);
            return Ok(());
        }
        if self.state == BlockState::EndOfBuffer {
            return Ok(());
        }
        if !self.state.allows(to) {
            return Err(VerifyError::InvalidTransition {
                from: self.state,
                to,
            });
        }
        self.state = to;
        Ok(())
    }

    /// Checks that the log may end here: at least one block was seen and the last
    /// one ended in a valid state.
    ///
    /// ```
    /// use flightrec_core::fdr::decoder::{BlockState, BlockVerifier, VerifyError};
    /// use flightrec_core::fdr::records::Record;
    /// let mut v = BlockVerifier::new();
    /// assert_eq!(v.finish(), Err(VerifyError::NoBuffers));
    /// v.feed(&Record::NewBuffer { tid: 1 }).unwrap();
    /// assert_eq!(v.finish(), Err(VerifyError::InvalidTerminal { state: BlockState::NewBuffer }));
    /// v.feed(&Record::Walltime { seconds: 0, micros: 0 }).unwrap();
    /// v.feed(&Record::NewCpuId { cpu: 0, tsc: 0 }).unwrap();
    /// assert_eq!(v.finish(), Ok(()));
    /// ```
    pub fn finish(&self) -> Result<(), VerifyError> {
        match self.state {
            // Any record other than NewBuffer or BufferExtents would have failed in
            // this state, so nothing that counts was fed.
            BlockState::Unknown => Err(VerifyError::NoBuffers),
            s if !s.is_terminal() => Err(VerifyError::InvalidTerminal { state: s }),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use BlockState as S;

    const ALL: [BlockState; 11] = [
        S::Unknown,
        S::NewBuffer,
        S::WallClockTime,
        S::PidEntry,
        S::NewCpuId,
        S::TscWrap,
        S::CustomEvent,
        S::TypedEvent,
        S::Function,
        S::CallArg,
        S::EndOfBuffer,
    ];

    /// The table of spec §3.1, written out pair by pair, against `allows`.
    #[test]
    fn transition_table_matches_the_spec() {
        let body = [
            S::NewCpuId,
            S::TscWrap,
            S::CustomEvent,
            S::TypedEvent,
            S::Function,
            S::EndOfBuffer,
        ];
        for from in ALL {
            for to in ALL {
                let want = match from {
                    S::Unknown => to == S::NewBuffer,
                    S::NewBuffer => to == S::WallClockTime,
                    S::WallClockTime => to == S::PidEntry || to == S::NewCpuId,
                    S::PidEntry => to == S::NewCpuId,
                    S::NewCpuId | S::TscWrap | S::CustomEvent | S::TypedEvent => body.contains(&to),
                    S::Function | S::CallArg => body.contains(&to) || to == S::CallArg,
                    S::EndOfBuffer => false,
                };
                assert_eq!(from.allows(to), want, "{from} -> {to}");
            }
        }
        let terminal: [BlockState; 7] = [
            S::EndOfBuffer,
            S::NewCpuId,
            S::TscWrap,
            S::CustomEvent,
            S::TypedEvent,
            S::Function,
            S::CallArg,
        ];
        for s in ALL {
            assert_eq!(s.is_terminal(), terminal.contains(&s), "{s}");
        }
    }

    #[test]
    fn end_of_buffer_ignores_everything_until_new_buffer() {
        let mut v = BlockVerifier::new();
        for r in [
            Record::NewBuffer { tid: 1 },
            Record::Walltime {
                seconds: 0,
                micros: 0,
            },
            Record::NewCpuId { cpu: 0, tsc: 0 },
            Record::EndOfBuffer,
            // Not allowed anywhere else after a body record, ignored here.
            Record::Pid { pid: 1 },
            Record::Walltime {
                seconds: 0,
                micros: 0,
            },
            Record::CallArgument { value: 0 },
        ] {
            v.feed(&r).unwrap();
        }
        assert_eq!(v.state(), S::EndOfBuffer);
        v.feed(&Record::NewBuffer { tid: 2 }).unwrap();
        assert_eq!(v.blocks(), 2);
        assert_eq!(
            v.feed(&Record::CallArgument { value: 0 }),
            Err(VerifyError::InvalidTransition {
                from: S::NewBuffer,
                to: S::CallArg
            })
        );
        // The failed record left the state alone.
        assert_eq!(v.state(), S::NewBuffer);
        assert_eq!(
            v.feed(&Record::NewBuffer { tid: 3 }),
            Err(VerifyError::InvalidTerminal {
                state: S::NewBuffer
            })
        );
    }

    #[test]
    fn extents_are_invisible_and_an_empty_log_has_no_buffers() {
        let mut v = BlockVerifier::new();
        assert_eq!(v.finish(), Err(VerifyError::NoBuffers));
        v.feed(&Record::BufferExtents { size: 0 }).unwrap();
        assert_eq!(v.state(), S::Unknown);
        assert_eq!(v.finish(), Err(VerifyError::NoBuffers));
        assert_eq!(
            v.feed(&Record::TscWrap { tsc: 0 }),
            Err(VerifyError::InvalidTransition {
                from: S::Unknown,
                to: S::TscWrap
            })
        );
    }
}
