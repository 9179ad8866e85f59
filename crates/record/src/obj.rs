//! `T` read from a JSON object and nothing else. A type with a derived `Deserialize` also
//! takes an array, field by position; the fast paths that read a line straight into their
//! own types take only what the general reader would (which wants objects), so they wrap
//! them in this.

use serde::Deserialize;

pub struct Obj<T>(pub T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Obj<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for Visit<T> {
            type Value = T;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(serde::de::value::MapAccessDeserializer::new(map))
            }
        }
        d.deserialize_map(Visit(std::marker::PhantomData)).map(Obj)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize, Debug, PartialEq)]
    struct P<'a> {
        a: u32,
        #[serde(borrow)]
        b: std::borrow::Cow<'a, str>,
    }

    #[test]
    fn objects_only_and_borrowed() {
        let Obj(p) = serde_json::from_str::<Obj<P>>(r#"{"b":"x","a":1}"#).unwrap();
        assert_eq!(
            p,
            P {
                a: 1,
                b: "x".into()
            }
        );
        assert!(matches!(p.b, std::borrow::Cow::Borrowed(_)));
        assert!(
            serde_json::from_str::<P>(r#"[1,"x"]"#).is_ok(),
            "a derived struct takes it"
        );
        assert!(serde_json::from_str::<Obj<P>>(r#"[1,"x"]"#).is_err());
    }
}
