//! Rectangles between ratatui's and the core's own (the core records where panes were drawn,
//! for mouse hits, without knowing ratatui).

use switchboard_core::input;

pub fn core_rect(r: ratatui::layout::Rect) -> input::Rect {
    input::Rect::new(r.x, r.y, r.width, r.height)
}

pub fn ui_rect(r: input::Rect) -> ratatui::layout::Rect {
    ratatui::layout::Rect::new(r.x, r.y, r.width, r.height)
}
