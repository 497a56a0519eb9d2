//! The values that cross the store's two backends: what a statement binds ([`Param`]) and what a
//! row's column holds, read back as a Rust type ([`Column`]). Both backends see the same five
//! kinds SQLite has; on PostgreSQL a value is written in whatever type the server inferred for its
//! parameter (an integer into `bigint`, `integer` or `double precision`), so the shared SQL needs no
//! casts where the column's type says it.

use std::error::Error as StdError;

use postgres_types::{FromSql, IsNull, ToSql, Type, to_sql_checked};

/// One bound or read value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Value<'a> {
    /// SQL NULL.
    Null,
    /// A 64-bit integer (booleans are 0 and 1, as SQLite stores them).
    Int(i64),
    /// An unsigned integer beyond `i64`: refused when bound, never stored.
    OutOfRange(u64),
    /// A double.
    Real(f64),
    /// UTF-8 text.
    Text(&'a str),
    /// Text as PostgreSQL holds it when it had to be escaped (see [`escape_text`]): read back
    /// unescaped.
    EscapedText(&'a str),
    /// Bytes.
    Blob(&'a [u8]),
}

/// Something a statement can bind.
pub(crate) trait Param {
    /// The value to bind.
    fn value(&self) -> Value<'_>;
}

macro_rules! int_param {
    ($($t:ty),*) => {$(
        impl Param for $t {
            fn value(&self) -> Value<'_> {
                Value::Int(i64::from(*self))
            }
        }
    )*};
}
int_param!(i64, i32, u32, i16, u16, u8, bool);

macro_rules! unsigned_param {
    ($($t:ty),*) => {$(
        impl Param for $t {
            fn value(&self) -> Value<'_> {
                i64::try_from(*self).map_or(Value::OutOfRange(*self as u64), Value::Int)
            }
        }
    )*};
}
unsigned_param!(u64, usize);

impl Param for f64 {
    fn value(&self) -> Value<'_> {
        Value::Real(*self)
    }
}

impl Param for str {
    fn value(&self) -> Value<'_> {
        Value::Text(self)
    }
}

impl Param for String {
    fn value(&self) -> Value<'_> {
        Value::Text(self)
    }
}

impl Param for [u8] {
    fn value(&self) -> Value<'_> {
        Value::Blob(self)
    }
}

impl Param for std::borrow::Cow<'_, str> {
    fn value(&self) -> Value<'_> {
        Value::Text(self)
    }
}

impl Param for Vec<u8> {
    fn value(&self) -> Value<'_> {
        Value::Blob(self)
    }
}

impl<T: Param + ?Sized> Param for &T {
    fn value(&self) -> Value<'_> {
        (**self).value()
    }
}

impl<T: Param> Param for Option<T> {
    fn value(&self) -> Value<'_> {
        self.as_ref().map_or(Value::Null, Param::value)
    }
}

impl Param for Value<'_> {
    fn value(&self) -> Value<'_> {
        *self
    }
}

/// A Rust type a column is read as. The error says what the column held instead.
pub(crate) trait Column: Sized {
    /// Converts the column's value.
    fn from_value(value: Value<'_>) -> Result<Self, String>;
}

fn unexpected<T>(value: Value<'_>, wanted: &str) -> Result<T, String> {
    let held = match value {
        Value::Null => "NULL".to_string(),
        Value::Int(i) => format!("the integer {i}"),
        Value::OutOfRange(u) => format!("the integer {u}"),
        Value::Real(f) => format!("the real {f}"),
        Value::Text(_) | Value::EscapedText(_) => "text".to_string(),
        Value::Blob(b) => format!("{} bytes", b.len()),
    };
    Err(format!("expected {wanted}, found {held}"))
}

impl Column for i64 {
    fn from_value(value: Value<'_>) -> Result<Self, String> {
        match value {
            Value::Int(i) => Ok(i),
            other => unexpected(other, "an integer"),
        }
    }
}

macro_rules! narrow_column {
    ($($t:ty),*) => {$(
        impl Column for $t {
            fn from_value(value: Value<'_>) -> Result<Self, String> {
                let i = i64::from_value(value)?;
                <$t>::try_from(i).map_err(|_| format!("the integer {i} is out of range for {}", stringify!($t)))
            }
        }
    )*};
}
narrow_column!(u64, i32, u32, usize, u16, u8);

impl Column for bool {
    fn from_value(value: Value<'_>) -> Result<Self, String> {
        Ok(i64::from_value(value)? != 0)
    }
}

impl Column for f64 {
    fn from_value(value: Value<'_>) -> Result<Self, String> {
        match value {
            Value::Real(f) => Ok(f),
            Value::Int(i) => Ok(i as f64),
            other => unexpected(other, "a number"),
        }
    }
}

impl Column for String {
    fn from_value(value: Value<'_>) -> Result<Self, String> {
        match value {
            Value::Text(s) => Ok(s.to_string()),
            Value::EscapedText(s) => Ok(unescape_text(s)),
            other => unexpected(other, "text"),
        }
    }
}

impl Column for Vec<u8> {
    fn from_value(value: Value<'_>) -> Result<Self, String> {
        match value {
            Value::Blob(b) => Ok(b.to_vec()),
            other => unexpected(other, "bytes"),
        }
    }
}

impl<T: Column> Column for Option<T> {
    fn from_value(value: Value<'_>) -> Result<Self, String> {
        match value {
            Value::Null => Ok(None),
            other => T::from_value(other).map(Some),
        }
    }
}

// --- SQLite ---

impl rusqlite::ToSql for Value<'_> {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, ValueRef};
        Ok(ToSqlOutput::Borrowed(match *self {
            Value::Null => ValueRef::Null,
            Value::Int(i) => ValueRef::Integer(i),
            Value::OutOfRange(u) => return Err(rusqlite::Error::ToSqlConversionFailure(out_of_range(u))),
            Value::Real(f) => ValueRef::Real(f),
            Value::Text(s) | Value::EscapedText(s) => ValueRef::Text(s.as_bytes()),
            Value::Blob(b) => ValueRef::Blob(b),
        }))
    }
}

impl<'a> Value<'a> {
    /// A SQLite column's value (text that is not UTF-8 is an error, as Seshat writes none).
    pub(crate) fn from_sqlite(value: rusqlite::types::ValueRef<'a>) -> Result<Self, String> {
        use rusqlite::types::ValueRef;
        Ok(match value {
            ValueRef::Null => Value::Null,
            ValueRef::Integer(i) => Value::Int(i),
            ValueRef::Real(f) => Value::Real(f),
            ValueRef::Text(t) => Value::Text(std::str::from_utf8(t).map_err(|e| format!("text is not UTF-8: {e}"))?),
            ValueRef::Blob(b) => Value::Blob(b),
        })
    }
}

fn out_of_range(u: u64) -> Box<dyn StdError + Send + Sync> {
    format!("{u} is too large for a 64-bit integer column").into()
}

// --- PostgreSQL ---

/// The character that escapes text for PostgreSQL, whose `text` cannot hold NUL: U+10FFFF, a
/// noncharacter no text is meant to carry. NUL is written as it followed by `0`, and the escape
/// itself doubled, so any string comes back as it was stored, byte for byte.
const ESCAPE: char = '\u{10FFFF}';

fn needs_escape(text: &str) -> bool {
    text.contains(['\0', ESCAPE])
}

/// `text` with NUL and the escape character escaped (see [`ESCAPE`]).
pub(crate) fn escape_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\0' => out.extend([ESCAPE, '0']),
            ESCAPE => out.extend([ESCAPE, ESCAPE]),
            c => out.push(c),
        }
    }
    out
}

/// The inverse of [`escape_text`].
pub(crate) fn unescape_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match (c, c == ESCAPE) {
            (_, true) => match chars.next() {
                Some('0') => out.push('\0'),
                Some(other) => out.push(other),
                None => out.push(ESCAPE),
            },
            (c, false) => out.push(c),
        }
    }
    out
}

impl ToSql for Value<'_> {
    fn to_sql(&self, ty: &Type, out: &mut bytes::BytesMut) -> Result<IsNull, Box<dyn StdError + Sync + Send>> {
        match *self {
            Value::Null => Ok(IsNull::Yes),
            Value::OutOfRange(u) => Err(out_of_range(u)),
            Value::Int(i) => match *ty {
                Type::INT8 => i.to_sql(ty, out),
                Type::INT4 => i32::try_from(i)?.to_sql(ty, out),
                Type::INT2 => i16::try_from(i)?.to_sql(ty, out),
                Type::FLOAT8 => (i as f64).to_sql(ty, out),
                Type::FLOAT4 => (i as f32).to_sql(ty, out),
                Type::BOOL => (i != 0).to_sql(ty, out),
                _ => Err(format!("an integer cannot be bound to a parameter of type {ty}").into()),
            },
            Value::Real(f) => match *ty {
                Type::FLOAT8 => f.to_sql(ty, out),
                Type::FLOAT4 => (f as f32).to_sql(ty, out),
                _ => Err(format!("a real cannot be bound to a parameter of type {ty}").into()),
            },
            Value::Text(s) if needs_escape(s) => escape_text(s).to_sql(ty, out),
            Value::Text(s) | Value::EscapedText(s) => s.to_sql(ty, out),
            Value::Blob(b) => b.to_sql(ty, out),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

impl<'a> FromSql<'a> for Value<'a> {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn StdError + Sync + Send>> {
        Ok(match *ty {
            Type::INT8 => Value::Int(i64::from_sql(ty, raw)?),
            Type::INT4 => Value::Int(i32::from_sql(ty, raw)?.into()),
            Type::INT2 => Value::Int(i16::from_sql(ty, raw)?.into()),
            Type::OID => Value::Int(u32::from_sql(ty, raw)?.into()),
            Type::BOOL => Value::Int(bool::from_sql(ty, raw)?.into()),
            Type::FLOAT8 => Value::Real(f64::from_sql(ty, raw)?),
            Type::FLOAT4 => Value::Real(f32::from_sql(ty, raw)?.into()),
            Type::BYTEA => Value::Blob(raw),
            _ if <&str as FromSql>::accepts(ty) => {
                let text = <&str>::from_sql(ty, raw)?;
                if text.contains(ESCAPE) { Value::EscapedText(text) } else { Value::Text(text) }
            }
            _ => return Err(format!("a column of type {ty} cannot be read: cast it in the query").into()),
        })
    }

    fn from_sql_null(_: &Type) -> Result<Self, Box<dyn StdError + Sync + Send>> {
        Ok(Value::Null)
    }

    fn accepts(_: &Type) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unsigned_integer_past_i64_is_refused_not_wrapped() {
        assert_eq!(u64::MAX.value(), Value::OutOfRange(u64::MAX));
        assert_eq!(7u64.value(), Value::Int(7));
        assert!(rusqlite::ToSql::to_sql(&u64::MAX.value()).is_err());
    }

    #[test]
    fn text_with_nul_or_the_escape_comes_back_byte_for_byte() {
        for text in ["plain", "a\0b", "\0", "\u{10FFFF}", "x\u{10FFFF}0y\0\u{10FFFF}\u{10FFFF}", ""] {
            let escaped = escape_text(text);
            assert!(!escaped.contains('\0'), "{escaped:?}");
            assert_eq!(unescape_text(&escaped), text);
            assert_eq!(needs_escape(text), escaped != text, "{text:?}");
        }
    }

    #[test]
    fn a_column_says_what_it_held_instead() {
        assert_eq!(u8::from_value(Value::Int(300)).unwrap_err(), "the integer 300 is out of range for u8");
        assert_eq!(String::from_value(Value::Int(3)).unwrap_err(), "expected text, found the integer 3");
        assert_eq!(Option::<i64>::from_value(Value::Null), Ok(None));
    }
}
