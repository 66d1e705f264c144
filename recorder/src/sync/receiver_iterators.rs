//! The iterators of a receiver, written once for the two receivers that have them
//! (`sync::mpsc::Receiver` and `channel::Receiver`): each module invokes the macro where its
//! own `Receiver` is in scope, with its own documentation of each iterator.

/// Defines `Iter` (blocking, `Receiver::iter`), `TryIter` (the messages waiting now,
/// `Receiver::try_iter`) and `IntoIter` (owning) for the `Receiver` in scope, and its two
/// `IntoIterator` impls; each iterator's documentation comes before its keyword.
macro_rules! receiver_iterators {
    (
        $(#[$iter_doc:meta])* iter;
        $(#[$try_iter_doc:meta])* try_iter;
        $(#[$into_iter_doc:meta])* into_iter;
    ) => {
        $(#[$iter_doc])*
        #[derive(Debug)]
        pub struct Iter<'a, T> {
            receiver: &'a Receiver<T>,
        }

        impl<T> Iterator for Iter<'_, T> {
            type Item = T;

            #[track_caller]
            fn next(&mut self) -> Option<T> {
                self.receiver.recv().ok()
            }
        }

        $(#[$try_iter_doc])*
        #[derive(Debug)]
        pub struct TryIter<'a, T> {
            receiver: &'a Receiver<T>,
        }

        impl<T> Iterator for TryIter<'_, T> {
            type Item = T;

            #[track_caller]
            fn next(&mut self) -> Option<T> {
                self.receiver.try_recv().ok()
            }
        }

        $(#[$into_iter_doc])*
        #[derive(Debug)]
        pub struct IntoIter<T> {
            receiver: Receiver<T>,
        }

        impl<T> Iterator for IntoIter<T> {
            type Item = T;

            #[track_caller]
            fn next(&mut self) -> Option<T> {
                self.receiver.recv().ok()
            }
        }

        impl<T> IntoIterator for Receiver<T> {
            type Item = T;
            type IntoIter = IntoIter<T>;

            fn into_iter(self) -> IntoIter<T> {
                IntoIter { receiver: self }
            }
        }

        impl<'a, T> IntoIterator for &'a Receiver<T> {
            type Item = T;
            type IntoIter = Iter<'a, T>;

            fn into_iter(self) -> Iter<'a, T> {
                self.iter()
            }
        }
    };
}

pub(crate) use receiver_iterators;
