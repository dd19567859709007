//! A thread's small cache of what is derived from a string argument that
//! is nearly always a constant (a compiled regular expression, a cut
//! `to_char` template), so it is derived once rather than per row.

use std::collections::HashMap;
use std::convert::Infallible;
use std::rc::Rc;

/// How many entries a cache keeps before it starts over.
const CAPACITY: usize = 64;

/// Derived values by their string, shared (`Rc`), never cloned.
pub(super) struct StrCache<T: ?Sized>(HashMap<String, Rc<T>>);

impl<T: ?Sized> Default for StrCache<T> {
    fn default() -> Self {
        StrCache(HashMap::new())
    }
}

impl<T: ?Sized> StrCache<T> {
    /// The value for `key`, derived by `make` on a miss.
    pub(super) fn get_or_try<E>(
        &mut self,
        key: &str,
        make: impl FnOnce() -> Result<Rc<T>, E>,
    ) -> Result<Rc<T>, E> {
        if let Some(v) = self.0.get(key) {
            return Ok(Rc::clone(v));
        }
        let v = make()?;
        if self.0.len() >= CAPACITY {
            self.0.clear();
        }
        self.0.insert(key.to_string(), Rc::clone(&v));
        Ok(v)
    }

    /// The value for `key`, derived by `make` on a miss.
    pub(super) fn get_or_insert_with(&mut self, key: &str, make: impl FnOnce() -> Rc<T>) -> Rc<T> {
        match self.get_or_try(key, || Ok::<_, Infallible>(make())) {
            Ok(v) => v,
            Err(never) => match never {},
        }
    }
}
