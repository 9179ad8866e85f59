//! `workspace_image` and `workspace_document`.
//!
//! Images are decoded with the `image` crate (PNG and JPEG) and, when the encoded payload
//! would not fit the 2 MiB frame as base64, scaled down and re-encoded as PNG until it does.
//! PDF pages are read with `lopdf`: pure Rust, maintained (regular releases), it parses the
//! file and extracts one page's text without loading a renderer; encrypted or image-only
//! pages yield what text they carry and the page count, never a guess.

use base64::Engine as _;
use serde_json::{Map, Value, json};

use super::files::read_regular;
use crate::codec::{Code, FRAME_BYTES, Refusal};
use crate::validate::{rel_path, sha256_hex};
use switchboard_backend::contain::Root;

/// Raw image bytes that fit the frame once base64-encoded (4/3) with room for the envelope.
pub const IMAGE_BYTES: usize = (FRAME_BYTES - 64 * 1024) / 4 * 3;

fn read_all(root: &Root, args: &Map<String, Value>) -> Result<(String, Vec<u8>), Refusal> {
    let shown = args
        .get("path")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let rel = rel_path(&shown)?;
    let buf = read_regular(root.dir(), &rel, &shown, true)?
        .ok_or_else(|| Refusal::new(Code::NotFound, format!("{shown}: not found")))?;
    Ok((shown, buf))
}

/// `workspace_image`: MCP image content. The special `__content` key is the engine's cue to
/// send it as content beside the structured summary.
pub fn image(root: &Root, args: &Map<String, Value>) -> Result<Value, Refusal> {
    let (shown, bytes) = read_all(root, args)?;
    let format = image::guess_format(&bytes)
        .map_err(|_| Refusal::new(Code::Failed, format!("{shown} is not a PNG or JPEG image")))?;
    let mime = match format {
        image::ImageFormat::Png => "image/png",
        image::ImageFormat::Jpeg => "image/jpeg",
        _ => {
            return Err(Refusal::new(
                Code::Failed,
                format!("{shown}: only PNG and JPEG are served"),
            ));
        }
    };
    let img = image::load_from_memory_with_format(&bytes, format)
        .map_err(|e| Refusal::new(Code::Failed, format!("{shown} could not be decoded: {e}")))?;
    let (w, h) = (img.width(), img.height());
    let (data, mime, out_w, out_h) = if bytes.len() <= IMAGE_BYTES {
        (bytes.clone(), mime, w, h)
    } else {
        let mut scale = ((IMAGE_BYTES as f64) / (bytes.len() as f64)).sqrt();
        loop {
            let nw = ((w as f64 * scale) as u32).max(1);
            let nh = ((h as f64 * scale) as u32).max(1);
            let small = img.resize(nw, nh, image::imageops::FilterType::Triangle);
            let mut out = std::io::Cursor::new(Vec::new());
            small
                .write_to(&mut out, image::ImageFormat::Png)
                .map_err(|e| Refusal::new(Code::Failed, e.to_string()))?;
            let out = out.into_inner();
            if out.len() <= IMAGE_BYTES {
                break (out, "image/png", nw, nh);
            }
            if nw == 1 && nh == 1 {
                return Err(Refusal::new(
                    Code::TooLarge,
                    format!("{shown} cannot be scaled under the frame limit"),
                ));
            }
            scale *= 0.7;
        }
    };
    let b64 = base64::engine::general_purpose::STANDARD.encode(&data);
    Ok(json!({
        "path": shown,
        "sha256": sha256_hex(&bytes),
        "mimeType": mime,
        "width": w,
        "height": h,
        "sentWidth": out_w,
        "sentHeight": out_h,
        "scaled": (out_w, out_h) != (w, h),
        "__content": [{"type": "image", "data": b64, "mimeType": mime}],
    }))
}

/// `workspace_document`: one PDF page's text and the page count.
pub fn document(root: &Root, args: &Map<String, Value>) -> Result<Value, Refusal> {
    let (shown, bytes) = read_all(root, args)?;
    let page = args.get("page").and_then(Value::as_u64).unwrap_or(1) as u32;
    let doc = lopdf::Document::load_mem(&bytes)
        .map_err(|e| Refusal::new(Code::Failed, format!("{shown} is not a readable PDF: {e}")))?;
    let pages = doc.get_pages().len() as u32;
    if page > pages {
        return Err(Refusal::new(
            Code::NotFound,
            format!("{shown} has {pages} pages; page {page} does not exist"),
        ));
    }
    let text = doc
        .extract_text(&[page])
        .map_err(|e| Refusal::new(Code::Failed, format!("page {page} of {shown}: {e}")))?;
    // Too large is refused by the engine's frame check rather than cut here.
    Ok(
        json!({"path": shown, "sha256": sha256_hex(&bytes), "page": page, "pageCount": pages, "text": text}),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root(name: &str) -> (std::path::PathBuf, Root) {
        let base = std::env::temp_dir().join(format!("sb-gw-media-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(&base).unwrap();
        (base.clone(), Root::open(&base).unwrap())
    }

    fn a(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn a_large_image_is_scaled_under_the_frame() {
        let (base, root) = root("img");
        // Noise compresses badly: about 4.7 MB of PNG.
        let mut img = image::RgbImage::new(1400, 1100);
        let mut x: u32 = 12345;
        for p in img.pixels_mut() {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            *p = image::Rgb([(x >> 16) as u8, (x >> 8) as u8, x as u8]);
        }
        img.save(base.join("big.png")).unwrap();
        assert!(std::fs::metadata(base.join("big.png")).unwrap().len() as usize > IMAGE_BYTES);
        let r = image(&root, &a(json!({"path": "big.png"}))).unwrap();
        assert_eq!(r["scaled"], true);
        let b64 = r["__content"][0]["data"].as_str().unwrap();
        assert!(b64.len() < FRAME_BYTES - 64 * 1024);
        assert_eq!(r["width"], 1400);
        image::RgbImage::new(4, 4)
            .save(base.join("small.png"))
            .unwrap();
        let r = image(&root, &a(json!({"path": "small.png"}))).unwrap();
        assert_eq!(r["scaled"], false);
    }

    #[test]
    fn one_pdf_page_of_text() {
        use lopdf::content::{Content, Operation};
        use lopdf::{Object, Stream, dictionary};
        let (base, root) = root("pdf");
        let mut doc = lopdf::Document::with_version("1.5");
        let pages_id = doc.new_object_id();
        let font_id = doc.add_object(
            dictionary! {"Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Courier"},
        );
        let resources_id = doc.add_object(dictionary! {"Font" => dictionary! {"F1" => font_id}});
        let mut kids = Vec::new();
        for text in ["first page", "second page"] {
            let content = Content {
                operations: vec![
                    Operation::new("BT", vec![]),
                    Operation::new("Tf", vec!["F1".into(), 12.into()]),
                    Operation::new("Td", vec![50.into(), 700.into()]),
                    Operation::new("Tj", vec![Object::string_literal(text)]),
                    Operation::new("ET", vec![]),
                ],
            };
            let cid = doc.add_object(Stream::new(dictionary! {}, content.encode().unwrap()));
            let pid = doc.add_object(
                dictionary! {"Type" => "Page", "Parent" => pages_id, "Contents" => cid},
            );
            kids.push(pid.into());
        }
        doc.objects.insert(
            pages_id,
            Object::Dictionary(dictionary! {
                "Type" => "Pages", "Kids" => kids, "Count" => 2, "Resources" => resources_id,
                "MediaBox" => vec![0.into(), 0.into(), 595.into(), 842.into()],
            }),
        );
        let catalog = doc.add_object(dictionary! {"Type" => "Catalog", "Pages" => pages_id});
        doc.trailer.set("Root", catalog);
        doc.save(base.join("d.pdf")).unwrap();
        let r = document(&root, &a(json!({"path": "d.pdf", "page": 2}))).unwrap();
        assert_eq!(r["pageCount"], 2);
        assert!(r["text"].as_str().unwrap().contains("second page"), "{r}");
        let e = document(&root, &a(json!({"path": "d.pdf", "page": 3}))).unwrap_err();
        assert_eq!(e.code, Code::NotFound);
    }
}
