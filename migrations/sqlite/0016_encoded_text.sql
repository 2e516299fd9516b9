-- Nothing changes in SQLite, which stores U+0000 in text as given. (PostgreSQL's 0016 encodes
-- its few text values starting with U+FFFF, the mark of a value its store keeps encoded.)
SELECT 1;
