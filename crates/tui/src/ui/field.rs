//! Drawing a core text field: the textarea widget, built from the field's lines and cursor for
//! the frame (the widget keeps no state between frames: the field is the core's).

use ratatui::style::Style;
use ratatui_textarea::{CursorMove, TextArea};

use switchboard_core::text_field::TextField;

/// The most of a field a frame takes around its cursor, either side (rows, columns): more
/// than any box shows, so a widget scrolled to the cursor looks as with the whole field.
const WINDOW: (usize, usize) = (256, 4096);

/// A widget showing `field`, the cursor where the field has it, no cursor-line highlight.
/// Built from the part of the field around its cursor (`TextField::window`): a frame costs
/// what it shows, however much was typed or pasted.
pub fn widget(field: &TextField) -> TextArea<'static> {
    let (lines, (row, col)) = field.window(WINDOW.0, WINDOW.1);
    let mut area = TextArea::new(lines);
    area.set_cursor_line_style(Style::default());
    let clamp = |n: usize| u16::try_from(n).unwrap_or(u16::MAX);
    area.move_cursor(CursorMove::Jump(clamp(row), clamp(col)));
    area
}
