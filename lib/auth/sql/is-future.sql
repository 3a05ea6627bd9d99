-- Whether $1 is still to come by the database's clock.
SELECT $1::timestamptz > now() AS "fresh!"
