//! A rendered screen (`Buffer`) as an SVG picture, for the README screenshots.

use std::fmt::Write;

use ratatui::buffer::Buffer;
use ratatui::style::{Color, Modifier};

const CELL_W: f32 = 8.4;
const CELL_H: f32 = 18.0;
/// Terminal background and foreground of the picture.
#[derive(Clone, Copy)]
pub struct Palette {
    pub bg: &'static str,
    pub fg: &'static str,
}

pub const DARK: Palette = Palette {
    bg: "#1e1f29",
    fg: "#e6e6e6",
};
pub const LIGHT: Palette = Palette {
    bg: "#fbfbf8",
    fg: "#1e1f29",
};

fn hex(c: Color, default: &str) -> String {
    let named = match c {
        Color::Reset => return default.to_string(),
        Color::Black => "#282a36",
        Color::Red => "#ff5c57",
        Color::Green => "#5af78e",
        Color::Yellow => "#f3f99d",
        Color::Blue => "#57c7ff",
        Color::Magenta => "#ff6ac1",
        Color::Cyan => "#9aedfe",
        Color::Gray => "#c7c7c7",
        Color::DarkGray => "#686868",
        Color::LightRed => "#ff8782",
        Color::LightGreen => "#8ff7b0",
        Color::LightYellow => "#f8fbc4",
        Color::LightBlue => "#8ad7ff",
        Color::LightMagenta => "#ff9ad6",
        Color::LightCyan => "#c0f4fe",
        Color::White => "#f1f1f0",
        Color::Rgb(r, g, b) => return format!("#{r:02x}{g:02x}{b:02x}"),
        Color::Indexed(i) => return format!("#{0:02x}{0:02x}{0:02x}", i),
    };
    named.to_string()
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Render `buf` as a standalone SVG document on a dark terminal.
pub fn buffer_to_svg(buf: &Buffer) -> String {
    buffer_to_svg_on(buf, DARK)
}

/// Render `buf` as a standalone SVG document on a terminal with `palette`.
pub fn buffer_to_svg_on(buf: &Buffer, palette: Palette) -> String {
    let (bg0, fg0) = (palette.bg, palette.fg);
    let (w, h) = (buf.area.width, buf.area.height);
    let mut out = String::new();
    let _ = write!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" viewBox="0 0 {} {}" font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" font-size="14">"#,
        w as f32 * CELL_W + 16.0,
        h as f32 * CELL_H + 16.0,
        w as f32 * CELL_W + 16.0,
        h as f32 * CELL_H + 16.0
    );
    let _ = write!(
        out,
        r#"<rect width="100%" height="100%" rx="6" fill="{bg0}"/><g transform="translate(8,8)">"#
    );
    for y in 0..h {
        let mut x = 0;
        while x < w {
            let cell = &buf[(x, y)];
            let reversed = cell.modifier.contains(Modifier::REVERSED);
            let (mut fg, mut bg) = (hex(cell.fg, fg0), hex(cell.bg, bg0));
            if reversed {
                std::mem::swap(&mut fg, &mut bg);
            }
            // Group a run of cells with the same look into one <text>.
            let mut text = String::new();
            let start = x;
            while x < w {
                let c = &buf[(x, y)];
                if c.fg != cell.fg || c.bg != cell.bg || c.modifier != cell.modifier {
                    break;
                }
                text.push_str(c.symbol());
                x += 1;
            }
            let px = start as f32 * CELL_W;
            let py = y as f32 * CELL_H;
            let cells = (x - start) as f32;
            if bg != bg0 {
                let _ = write!(
                    out,
                    r#"<rect x="{px:.1}" y="{py:.1}" width="{:.1}" height="{CELL_H}" fill="{bg}"/>"#,
                    cells * CELL_W
                );
            }
            if text.trim().is_empty() {
                continue;
            }
            let mut attrs = String::new();
            if cell.modifier.contains(Modifier::BOLD) {
                attrs.push_str(r#" font-weight="bold""#);
            }
            if cell.modifier.contains(Modifier::ITALIC) {
                attrs.push_str(r#" font-style="italic""#);
            }
            if cell.modifier.contains(Modifier::DIM) {
                attrs.push_str(r#" opacity="0.6""#);
            }
            let _ = write!(
                out,
                r#"<text x="{px:.1}" y="{:.1}" fill="{fg}" textLength="{:.1}" lengthAdjust="spacingAndGlyphs" xml:space="preserve"{attrs}>{}</text>"#,
                py + CELL_H - 5.0,
                cells * CELL_W,
                escape(&text)
            );
        }
    }
    out.push_str("</g></svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::layout::Rect;
    use ratatui::style::Style;

    #[test]
    fn escapes_and_colours() {
        let mut b = Buffer::empty(Rect::new(0, 0, 6, 1));
        b.set_string(0, 0, "a<b", Style::default().fg(Color::Red));
        let svg = buffer_to_svg(&b);
        assert!(svg.contains("a&lt;b"));
        assert!(svg.contains("#ff5c57"));
        assert!(svg.starts_with("<svg"));
    }
}
