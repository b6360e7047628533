"""Pure helpers with no ORM: JSON leaves, query terms, windows."""
