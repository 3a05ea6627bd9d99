-- Records import $1's parse: rows read ($2), rejected ($3), the bad rows shown ($4), and the stage files to remove when it ends ($5, appended).
UPDATE imports SET rows_read = $2, rejected = $3, bad_rows = $4, files = files || $5::jsonb WHERE id = $1
