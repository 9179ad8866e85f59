//! What a terminal's last frame drew, as the renderer measured it: the payload of
//! `Msg::Drawn`, kept by the state (`State::view`, each host client's view).
//!
//! Its own module below both: a message carries it and the state keeps it, so neither names
//! the other for it (`msg` stands below `state`).

use crate::input::Rect;
use crate::tree::NodeId;

/// What the renderer measured in the last frame, for page-sized moves, mouse hits and the
/// card's scroll. Plain data the UI hands the reducer after each frame (`Msg::Drawn`), so
/// `update` reads only its state and its message, never the renderer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ViewMetrics {
    pub transcript_height: u16,
    /// The scroll offset actually drawn, in lines from the bottom.
    pub drawn_scroll_back: usize,
    pub tree_top: usize,
    /// Inner areas of the tree and transcript panes, for the mouse.
    pub tree_area: Rect,
    pub transcript_area: Rect,
    /// (Session index, node) shown on each drawn tree row (two rows per node), from the top
    /// of the pane.
    pub tree_rows: Vec<(usize, NodeId)>,
    /// Transcript item shown on each drawn row, from the top of the pane.
    pub item_rows: Vec<usize>,
    /// How far the gate card's body can scroll at the size last drawn (0: it all fits).
    pub card_max_scroll: usize,
}
