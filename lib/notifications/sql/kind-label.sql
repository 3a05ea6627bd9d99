-- Kind $1's label, if it is one.
SELECT label FROM notification_kinds WHERE kind = $1::text
