//! Drawing a core text field: the textarea widget, built from the field's lines and cursor for
//! the frame (the widget keeps no state between frames: the field is the core's).

use ratatui::style::Style;
use ratatui_textarea::{CursorMove, TextArea};

use switchboard_core::text_field::TextField;

/// A widget showing `field`, the cursor where the field has it, no cursor-line highlight.
pub fn widget(field: &TextField) -> TextArea<'static> {
    let mut area = TextArea::new(field.lines().to_vec());
    area.set_cursor_line_style(Style::default());
    let (row, col) = field.cursor();
    let clamp = |n: usize| u16::try_from(n).unwrap_or(u16::MAX);
    area.move_cursor(CursorMove::Jump(clamp(row), clamp(col)));
    area
}
